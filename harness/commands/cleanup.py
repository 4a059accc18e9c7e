"""`fencepost cleanup`: remove whatever crashed runs and clusters left on this machine
(clusters/cleanup.py says exactly what, and that it touches nothing else)."""
from __future__ import annotations

import argparse
import sys

from harness.errors import EXIT_VALID

NAME = "cleanup"
HELP = ("remove what crashed runs left: fp-* namespaces, links, rules, containers, marked processes, "
        "lazy filesystem mounts")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", action="append", default=[], metavar="NAME",
                        help="remove only what this cluster left (repeatable; a run's cluster is "
                             "run-<last 6 characters of its run directory>); default: every cluster's")


EXAMPLES = (
    ("fencepost cleanup", "remove everything a crashed fencepost left on this machine"),
    ("fencepost cleanup --cluster run-abc123", "only what the run ...-abc123 left"),
)


def run(args: argparse.Namespace) -> int:
    from clusters import cleanup_everything

    removed, skipped = cleanup_everything(args.cluster)
    for item in removed:
        print(f"removed {item}")
    for item in skipped:
        print(f"fencepost cleanup: not checked: {item}", file=sys.stderr)
    print(f"cleanup: {len(removed)} item(s) removed" if removed else "cleanup: nothing to remove")
    return EXIT_VALID
