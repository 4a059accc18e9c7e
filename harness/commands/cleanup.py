"""`fencepost cleanup`: remove whatever crashed runs and clusters left on this machine
(clusters/cleanup.py says exactly what, and that it touches nothing else), and the
temporary `.partial` files that writers killed mid-write left under the results folder
(harness/rundir/atomic.py: only a killed writer's, never a live one's)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.harness.errors import EXIT_VALID

NAME = "cleanup"
HELP = ("remove what crashed runs left: fp-* namespaces, links, rules, containers, marked processes, "
        "lazy filesystem mounts, and half-written .partial files under the results folder")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", action="append", default=[], metavar="NAME",
                        help="remove only what this cluster left (repeatable; a run's cluster is "
                             "run-<last 6 characters of its run directory>); default: every cluster's")
    parser.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                        help="remove the .partial files killed writers left in this folder and every folder "
                             "under it (default results; nothing when it does not exist)")
    parser.add_argument("--only-partials", action="store_true",
                        help="remove only those .partial files: no cluster, process or mount is looked at")


EXAMPLES = (
    ("fencepost cleanup", "remove everything a crashed fencepost left on this machine"),
    ("fencepost cleanup --cluster run-abc123", "only what the run ...-abc123 left"),
    ("fencepost cleanup --only-partials --results /data/results", "only half-written files under /data/results"),
)


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.rundir.atomic import remove_stale_partials_under

    removed: list[str] = []
    skipped: list[str] = []
    if not args.only_partials:
        from fencepost.clusters import cleanup_everything

        removed, skipped = cleanup_everything(args.cluster)
    removed += [f"{path} (a killed writer's partial file)" for path in remove_stale_partials_under(args.results)]
    for item in removed:
        print(f"removed {item}")
    for item in skipped:
        print(f"fencepost cleanup: not checked: {item}", file=sys.stderr)
    print(f"cleanup: {len(removed)} item(s) removed" if removed else "cleanup: nothing to remove")
    return EXIT_VALID
