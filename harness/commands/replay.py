"""`fencepost replay RUN_DIR`: the same run again — its spec from test.json, and the nemesis
actions it recorded as a scripted schedule at the times they happened (harness/replay/) —
then checked, reported, and compared with what the recorded run found."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "replay"
HELP = "run a recorded run again: its spec, and the nemesis actions it recorded as a script"
EXAMPLES = (
    ("fencepost replay results/latest", "the newest run again, fault for fault"),
    ("fencepost replay RUN_DIR --print-script", "the script only (TOML), nothing runs"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory (e.g. results/latest)")
    parser.add_argument("--results", help="where the replay goes (default results)")
    parser.add_argument("--seed", type=int, help="another seed (default: the run's)")
    parser.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a backend setting for the replay, e.g. subnet=10.77.5.0/24 (repeatable)")
    parser.add_argument("--print-script", action="store_true",
                        help="print the recorded script as [[nemesis.script]] TOML tables and exit")


def overrides(args: argparse.Namespace, test: dict) -> dict:
    from fencepost.harness.commands.cluster import parse_backend_options

    changed = {"results": args.results or "results", "seed": args.seed}
    if args.backend_option:
        changed["backend_options"] = {**(test.get("backend_options") or {}),
                                      **parse_backend_options(args.backend_option)}
    return changed


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.errors import EXIT_CRASH, printable
    from fencepost.harness.index.page import refresh_index
    from fencepost.harness.replay.rerun import invalidating, recorded_test, rerun_spec
    from fencepost.harness.replay.script import flatten, recorded_script
    from fencepost.harness.run.progress import Progress
    from fencepost.harness.run.runner import RunError, run_test, verdict_text
    from fencepost.harness.run.spec_toml import value_toml
    from fencepost.harness.rundir.names import RESULTS_FILE

    test = recorded_test(args.run_dir)
    units = recorded_script(args.run_dir, float(test.get("time_limit") or 60))
    script = flatten(units)
    if args.print_script:
        for entry in script:
            print(f"[[nemesis.script]]\nat = {value_toml(entry.at)}\naction = {value_toml(entry.action)}\n")
        return 0
    before = invalidating(args.run_dir) if (args.run_dir / RESULTS_FILE).is_file() else {}
    spec = rerun_spec(test, script, overrides(args, test))
    print(f"replay of {args.run_dir}: {len(script)} nemesis action(s) as a script"
          + ("" if script else " (the run recorded none: it runs again as it was)"), file=sys.stderr)
    for entry in script:
        print(f"  at {entry.at:g}s: {printable(entry.action, False)}", file=sys.stderr)
    try:
        outcome = run_test(spec, Progress())
    except RunError as e:
        print(f"fencepost replay: {e}", file=sys.stderr)
        return EXIT_CRASH
    refresh_index(Path(spec.results))
    print(f"verdict: {verdict_text(outcome.check)}")
    after = invalidating(outcome.run_dir) if outcome.check is not None else {}
    if before:
        again = sorted(set(before) & set(after))
        print(f"the recorded run found: {', '.join(f'{k} {n}' for k, n in sorted(before.items()))}; "
              f"found again: {', '.join(again) if again else 'none of them'}")
    print(f"run directory: {outcome.run_dir}")
    if outcome.report is not None:
        print(f"report: {outcome.report}")
    return outcome.exit_code
