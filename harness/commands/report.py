"""`fencepost report RUN_DIR`: write (again) a run's report.html, history.html,
timeline.html, trace/ and plots/, e.g. after `fencepost check` of a run directory made
elsewhere."""
from __future__ import annotations

import argparse
from pathlib import Path

from fencepost.harness.errors import EXIT_VALID

NAME = "report"
HELP = ("write a run's report.html, history.html, timeline.html, trace pages and plots/ (again) from its "
        "history, final logs and results.json")
EXAMPLES = (
    ("fencepost report results/latest", "write the newest run's report.html, history.html, timeline.html, plots/"),
    ("fencepost check RUN_DIR && fencepost report RUN_DIR", "a run made elsewhere: check it, then report it"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a run directory, e.g. results/latest")


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.report import write_report

    print(f"report: {write_report(args.run_dir)}")
    return EXIT_VALID
