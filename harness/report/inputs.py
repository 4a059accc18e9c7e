"""What the report reads besides the history, tolerantly: test.json (any subset of
the spec's fields, or an older shape), results.json (docs/FORMATS.md, results.json, possibly missing: the
run was not checked), the client logs under clients/ (harness/rundir/clients.py), and the files of
the run directory to link to.

Nothing here raises for a missing or malformed file: the report says what it
could not read (`RunInputs.notes`) and shows the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fencepost.harness.report.trace import Target
from fencepost.harness.rundir.clients import ClientFiles, client_files
from fencepost.harness.rundir.names import NODES_DIR, RESULTS_FILE, RUN_FILES, TEST_FILE
from fencepost.harness.rundir.record import op_indices

MAX_NODE_FILES = 300


@dataclass(slots=True)
class RunInputs:
    run_dir: Path
    test: dict[str, Any]  # {} when missing or unreadable
    results: dict[str, Any] | None  # None: not checked (or unreadable)
    notes: list[str] = field(default_factory=list)  # what could not be read, for the page
    clients: ClientFiles = field(default_factory=ClientFiles)  # the client logs under clients/


def load_inputs(run_dir: Path) -> RunInputs:
    notes: list[str] = []
    test = read_json(run_dir / TEST_FILE, notes)
    results = read_json(run_dir / RESULTS_FILE, notes)
    if test is not None and not isinstance(test, dict):
        notes.append(f"{TEST_FILE} is not a JSON object; its settings are not shown")
        test = None
    if results is not None and not isinstance(results, dict):
        notes.append(f"{RESULTS_FILE} is not a JSON object; the run shows as not checked")
        results = None
    if results is None and not (run_dir / RESULTS_FILE).exists():
        notes.append(f"no {RESULTS_FILE}: this run was not checked; run "
                     f"`fencepost check {run_dir}` and then the report again")
    return RunInputs(run_dir, test or {}, results, notes, client_files(run_dir))


def read_json(path: Path, notes: list[str]) -> Any:
    """The parsed file; None if missing (silently) or unreadable (noted)."""
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as e:
        notes.append(f"{path.name} could not be read ({e}); it is left out")
        return None


def setting(test: dict[str, Any], *paths: str) -> Any:
    """The first of the dotted `paths` present in test.json ("nemesis.faults"), or None.
    A section given as a plain value answers for its own name (`"topic": "fp"`)."""
    for path in paths:
        node: Any = test
        for part in path.split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                node = None
                break
        if node is not None and not isinstance(node, dict):
            return node
    return None


def linked_indices(results: dict[str, Any] | None) -> set[int]:
    """History indices the anomaly examples of results.json name (their `ops`, and
    the lines attached under `history`)."""
    found: set[int] = set()
    anomalies = (results or {}).get("anomalies")
    if not isinstance(anomalies, dict):
        return found
    for examples in anomalies.values():
        for example in examples if isinstance(examples, list) else ():
            if isinstance(example, dict):
                found.update(op_indices(example.get("ops")))
                for line in example.get("history") or ():
                    if isinstance(line, dict) and type(line.get("index")) is int:
                        found.add(line["index"])
    return found


TRACED_PER_EXAMPLE = 3  # values of one example traced at most (inconsistent offsets, counterexamples)


def example_targets(example: dict[str, Any]) -> list[Target]:
    """What an anomaly example can be traced by: the values it names (`value`, `values`,
    or its counterexample's, a few), and an offset of its partition (`offset`, else
    `first_offset` (a poll that went back), else the first of `skipped` or `offsets`)."""
    values: list[str] = []
    if isinstance(example.get("value"), str):
        values.append(example["value"])
    for many in (example.get("values"), [e.get("value") for e in example.get("counterexample") or []
                                          if isinstance(e, dict)]):
        if isinstance(many, list):
            values += [v for v in many if isinstance(v, str)]
    targets = [Target(value=v) for v in list(dict.fromkeys(values))[:TRACED_PER_EXAMPLE]]
    topic, partition = example.get("topic"), example.get("partition")
    offset = next((o for o in (example.get("offset"), example.get("first_offset"),
                               *(example.get("skipped") or [])[:1], *(example.get("offsets") or [])[:1])
                   if type(o) is int), None)
    if isinstance(topic, str) and type(partition) is int and offset is not None:
        targets.append(Target(topic=topic, partition=partition, offset=offset))
    return targets


def trace_targets(results: dict[str, Any] | None) -> list[Target]:
    """Every value and offset the anomaly examples of results.json name, once each."""
    found: dict[Target, None] = {}
    anomalies = (results or {}).get("anomalies")
    for examples in anomalies.values() if isinstance(anomalies, dict) else ():
        for example in examples if isinstance(examples, list) else ():
            if isinstance(example, dict):
                found.update(dict.fromkeys(example_targets(example)))
    return list(found)


def node_files(run_dir: Path) -> list[str]:
    """Files under nodes/ (paths relative to the run directory): each node's logs first."""
    root = run_dir / NODES_DIR
    if not root.is_dir():
        return []
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    files.sort(key=lambda p: (p.relative_to(root).parts[0], p.suffix != ".log", str(p)))
    return [str(p.relative_to(run_dir)) for p in files[:MAX_NODE_FILES]]


def run_files(run_dir: Path) -> list[str]:
    """The run's own files that exist, and its counterexample pages (linear/)."""
    present = [name for name in RUN_FILES if (run_dir / name).is_file()]
    linear = run_dir / "linear"
    if linear.is_dir():
        present += [f"linear/{p.name}" for p in sorted(linear.glob("*.html"))]
    return present
