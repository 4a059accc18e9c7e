"""`fencepost shrink RUN_DIR [--tries N]`: the smallest nemesis script that still makes the
run fail the same way — delta debugging over the fault actions the run recorded and their
timing, each candidate run up to N times (harness/replay/shrink.py) — written as a TOML that
`fencepost run --config` runs."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fencepost.harness.commands.arguments import positive
from fencepost.harness.rundir.atomic import write_atomically

NAME = "shrink"
HELP = "reduce a failing run's faults to the smallest script that still yields its anomaly; writes a runnable TOML"
EXAMPLES = (
    ("fencepost shrink results/latest", "reduce the newest run (3 tries per candidate, at most 40 runs)"),
    ("fencepost shrink RUN_DIR --tries 2 --max-runs 12 --anomaly lost-write", "a bounded shrink, one kind"),
    ("fencepost run --config results/shrink/<run>/shrunk.toml", "the reproducer it wrote, run again"),
)
PRIORITY = ("lost-write", "replica-divergence", "inconsistent-offsets", "duplicate", "truncated-read",
            "nonlinearizable")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a failing run directory")
    parser.add_argument("--tries", type=positive(""), default=3, metavar="N",
                        help="runs of each candidate script; it reproduces if one of them does (default 3)")
    parser.add_argument("--max-runs", type=positive(""), default=40, metavar="M",
                        help="runs in all, the first check of the recorded script included (default 40)")
    parser.add_argument("--anomaly", metavar="KIND",
                        help="the anomaly kind to keep (default: the first of the run's invalidating kinds, "
                             "lost-write first)")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="the tries go to RESULTS/shrink/<run>/ (default results)")
    parser.add_argument("--out", type=Path, help="the TOML written (default RESULTS/shrink/<run>/shrunk.toml)")
    parser.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a backend setting for the tries, e.g. subnet=10.77.5.0/24 (repeatable)")



def run(args: argparse.Namespace) -> int:
    from fencepost.harness.commands.cluster import parse_backend_options
    from fencepost.harness.errors import EXIT_UNKNOWN, BadInput, printable
    from fencepost.harness.index.page import refresh_index
    from fencepost.harness.replay.rerun import invalidating, recorded_test, rerun_spec
    from fencepost.harness.replay.script import recorded_script
    from fencepost.harness.replay.shrink import Candidate, Shrinker, Unreproduced
    from fencepost.harness.run.progress import Progress
    from fencepost.harness.run.runner import run_test
    from fencepost.harness.run.spec_toml import spec_toml

    test = recorded_test(args.run_dir)
    found = invalidating(args.run_dir)
    if not found:
        raise BadInput(f"{args.run_dir}: the run is not invalid (no anomaly of its invalid set): nothing to shrink; "
                       "give a failing run (a campaign's surprise, or a run that exited 1)")
    kind = args.anomaly or next((k for k in PRIORITY if k in found), sorted(found)[0])
    if kind not in found:
        raise BadInput(f"--anomaly {kind}: the run did not find it; it found {', '.join(sorted(found))}")
    time_limit = float(test.get("time_limit") or 60)
    units = recorded_script(args.run_dir, time_limit)
    if not units:
        raise BadInput(f"{args.run_dir}: the run recorded no nemesis action: there is no fault script to shrink")
    home = args.results / "shrink" / args.run_dir.resolve().name
    out = args.out or home / "shrunk.toml"
    changed: dict[str, Any] = {"results": str(home / "runs"), "name": "shrink"}
    if args.backend_option:
        changed["backend_options"] = {**(test.get("backend_options") or {}),
                                      **parse_backend_options(args.backend_option)}
    rerun_spec(test, [e for u in units for e in u.entries], changed)  # a bad override is refused before any run

    def run_script(candidate: Candidate, seed: int) -> tuple[dict[str, int], str]:
        spec = rerun_spec(test, candidate.script(), {**changed, "seed": seed, "time_limit": candidate.time_limit})
        outcome = run_test(spec, Progress(sys.stderr, live=False))
        return (invalidating(outcome.run_dir) if outcome.check is not None else {}), str(outcome.run_dir)

    seed = int(test.get("seed") or 0)
    shrinker = Shrinker(run_script, kind, seed, args.tries, args.max_runs,
                        say=lambda line: print(line, file=sys.stderr))
    start = Candidate(tuple(units), time_limit)
    print(f"shrink {args.run_dir}: keeping {kind}; {start.describe()}", file=sys.stderr)
    try:
        best = shrinker.shrink(start)
    except Unreproduced as e:
        print(f"fencepost shrink: {e}; nothing written (try more --tries, or `fencepost replay {args.run_dir}`)",
              file=sys.stderr)
        _log(home, args, kind, start, None, shrinker)
        refresh_index(args.results)
        return EXIT_UNKNOWN
    best_seed = shrinker.seed_of(best)
    spec = rerun_spec(test, best.script(), {"seed": best_seed, "time_limit": best.time_limit})
    comment = (f"fencepost shrink {args.run_dir}\n"
               f"the smallest nemesis script found that still yields {kind} (in at least one of {args.tries} tries,\n"
               f"seeds from {seed}; this seed reproduced it): {best.actions} action(s) and {best.time_limit:g} s, "
               f"from {start.actions} action(s) and {start.time_limit:g} s; {shrinker.runs} runs spent.\n"
               f"run it: fencepost run --config {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, spec_toml(spec, comment))
    _log(home, args, kind, start, best, shrinker)
    refresh_index(args.results)
    print(f"from {start.actions} action(s) in {start.time_limit:g} s to {best.actions} in {best.time_limit:g} s "
          f"({shrinker.runs} runs):")
    for entry in best.script():
        print(f"  at {entry.at:g}s: {printable(entry.action, False)}")
    print(f"reproducer: {out}\nrun it: fencepost run --config {out}")
    return 0


def _log(home: Path, args: argparse.Namespace, kind: str, start, best, shrinker) -> None:
    """shrink.json beside the tries: the candidates run, in order, and the answer."""
    home.mkdir(parents=True, exist_ok=True)
    record = {"run_dir": str(args.run_dir), "anomaly": kind, "tries": args.tries, "max_runs": args.max_runs,
              "start": {"script": [e.to_json() for e in start.script()], "time_limit": start.time_limit},
              "best": None if best is None else {"script": [e.to_json() for e in best.script()],
                                                  "time_limit": best.time_limit},
              "runs": [{"script": [e.to_json() for e in t.candidate.script()], "time_limit": t.candidate.time_limit,
                        "seed": t.seed, "reproduced": t.reproduced, "found": t.found, "run_dir": t.run_dir}
                       for t in shrinker.history]}
    write_atomically(home / "shrink.json", json.dumps(record, indent=1) + "\n")
