"""The premise section of results.json: whether the run's durability scenarios did what they
exist to test — the one owner of the section's format; the rules are in docs/CHECKERS.md
("Premise").

A scenario that power-cuts replicas (nemesis/durability.py) judges its own premise as it runs
and writes it in its info line, `premise` {met, why}: `last-replica-standing` needs the leader's
cut to take acknowledged records (its durable log ends below the high watermark it had when its
followers were cut off), `kip101-divergence` needs the replica that returns
first to lose part of its log and the old leader to keep more than it. Where it did not, the
run's verdict says nothing about the protocol under test: a valid run then tested nothing.

`verdict`: "none" (no scenario judged a premise), "met" (every one met), "not-met" (any not
met), "unknown" (any could not be measured, none unmet). `scenarios` lists each judgement
with its history index. Never part of `valid`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from fencepost.harness.rundir.history import NEMESIS, iter_plain
from fencepost.harness.rundir.names import HISTORY_FILE

KEY = b'"premise"'  # only history lines with it are decoded


def premise(run_dir: Path) -> dict[str, Any]:
    """The section for the run in `run_dir` (module doc)."""
    scenarios: list[dict[str, Any]] = []
    history = run_dir / HISTORY_FILE
    for op in iter_plain(history, containing=KEY) if history.is_file() else ():
        judged = op.value.get("premise") if isinstance(op.value, dict) else None
        if op.process != NEMESIS or op.type != "info" or not isinstance(judged, dict):
            continue
        met = judged.get("met")
        scenarios.append({"scenario": op.f, "index": op.index, "met": met if isinstance(met, bool) else None,
                          "why": str(judged.get("why") or "")})
    return {"verdict": premise_verdict([s["met"] for s in scenarios]), "scenarios": scenarios}


def premise_verdict(judgements: list[bool | None]) -> str:
    if not judgements:
        return "none"
    if False in judgements:
        return "not-met"
    return "met" if all(judgements) else "unknown"


def describe(section: dict[str, Any]) -> list[str]:
    """One line per scenario whose premise was not met or not measured (the summary's)."""
    return [f"{s['scenario']} (history index {s['index']}): "
            f"{'premise not met' if s['met'] is False else 'premise not measured'}: {s['why']}"
            for s in section.get("scenarios") or () if s.get("met") is not True]
