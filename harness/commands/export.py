"""`fencepost export RUN_DIR --edn [--out FILE]`: the history in Jepsen's EDN form."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.harness.errors import EXIT_VALID, BadInput

NAME = "export"
HELP = "export a run's history for other tools (--edn: Jepsen's kafka workload form)"
EXAMPLES = (
    ("fencepost export results/latest --edn", "write RUN_DIR/history.edn for Jepsen and Elle"),
    ("fencepost export RUN_DIR --edn --out /tmp/h.edn", "elsewhere (a new or regular file: anything else is refused)"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a run directory")
    parser.add_argument("--edn", action="store_true",
                        help="write the history as Jepsen EDN, one op map per line")
    parser.add_argument("--out", metavar="FILE", type=Path,
                        help="where to write (default: RUN_DIR/history.edn)")


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.edn import export_edn
    from fencepost.harness.rundir.atomic import NotRegularFile
    from fencepost.harness.rundir.find import history_of

    if not args.edn:
        raise BadInput("choose an export format: --edn (the only one so far)")
    history_of(args.run_dir)
    if args.out is not None and not args.out.parent.is_dir():
        raise BadInput(f"--out {args.out}: the folder {args.out.parent} does not exist")
    try:
        result = export_edn(args.run_dir, args.out)
    except NotRegularFile:
        raise  # says what is in the way
    except OSError as e:  # a folder that cannot be written, a disk that is full
        raise BadInput(f"cannot export {args.run_dir}: {e.filename or args.out}: {e.strerror or e}; give --out "
                       "a file in a folder you can write") from e
    problems = result.problems
    for line in problems.listed_errors() + problems.listed_warnings():
        print(f"fencepost export: {line}", file=sys.stderr)
    if problems.error_count:
        print(f"fencepost export: {problems.error_count} bad line(s) were left out", file=sys.stderr)
    print(f"wrote {result.ops} ops to {result.path}")
    return EXIT_VALID
