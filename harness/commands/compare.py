"""`fencepost compare PATH... [--out DIR] [--format text|json|markdown] [--baseline
SYSTEM[:TRUNCATION]]`: runs or campaigns side by side — per system, truncation and fault:
runs, invalid runs, the invalid-run rate with its Wilson 95% interval, Fisher's exact
p-value against the previous row of its fault group (or the baseline's row), the median
time to first detection and the anomalies found; printed in the chosen format, written as
compare.csv and compare.png (harness/compare/), each through the one atomic writer
(harness/rundir/atomic.py: an existing one that is not a regular file is refused, exit 254,
before either is written). Nothing is written into the runs read."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.harness.compare.formats import FORMATS
from fencepost.harness.rundir.atomic import NotRegularFile, refuse_unless_regular, write_atomically

NAME = "compare"
CSV_FILE = "compare.csv"
PNG_FILE = "compare.png"
HELP = "compare runs or campaigns per protocol version and fault: table, p-values, CSV and plot"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                        help="run directories, campaign directories, or folders holding them")
    parser.add_argument("--out", type=Path, default=Path("results") / "compare",
                        help="where compare.csv and compare.png go (default results/compare)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="what is printed: text (a table, the default), json (a list of rows with every "
                             "figure) or markdown (a GitHub table); the line naming the files written goes to "
                             "stderr for json and markdown")
    parser.add_argument("--baseline", metavar="SYSTEM[:TRUNCATION]",
                        help="test every row of a fault group against this configuration's row of the group "
                             "(e.g. kafka:2.0.1, own:hw, kafka:2.0.1:kip320) instead of against the row above it")


EXAMPLES = (
    ("fencepost compare results/", "every run under results/, per system, truncation and faults"),
    ("fencepost compare results/campaigns/truncation/latest --out /tmp/cmp", "one campaign, written elsewhere"),
)


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.compare.collect import collect
    from fencepost.harness.compare.formats import render, to_csv
    from fencepost.harness.compare.plot import plot_rates
    from fencepost.harness.compare.significance import Baseline, groups_without, with_p_values
    from fencepost.harness.compare.table import rows
    from fencepost.harness.errors import BadInput, printable

    baseline = Baseline.parse(args.baseline) if args.baseline is not None else None
    results = collect(args.paths)
    out = args.out.resolve()
    for result in results:
        if out.is_relative_to(result.run_dir.resolve()):
            raise BadInput(f"--out {args.out} lies inside the run directory {result.run_dir}, which compare "
                           "reads and never writes into: give another folder")
    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} is a file, not a folder: compare writes {CSV_FILE} and {PNG_FILE} "
                       "into a folder; give another path")
    for name in (CSV_FILE, PNG_FILE):  # both refused before either is written
        refuse_unless_regular(args.out / name)
    table = with_p_values(rows(results), baseline)
    text = render(table, args.format, None if baseline is None else str(baseline))
    text = printable(text)  # the runs' settings and anomaly names, escaped for the terminal (JSON stays JSON)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    aside = sys.stdout if args.format == "text" else sys.stderr
    if baseline is not None:
        for faults in groups_without(table, baseline):
            print(f"no {baseline} runs under faults {faults}: no p-values there", file=aside)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomically(args.out / CSV_FILE, to_csv(table))
        plot = plot_rates(table, args.out / PNG_FILE)
    except NotRegularFile:
        raise  # made meanwhile; says what is in the way
    except OSError as e:
        raise BadInput(f"cannot write into --out {args.out}: {e.filename or args.out}: {e.strerror or e}; give "
                       "a folder you can write") from e
    print(f"table: {args.out / CSV_FILE}; plot: {plot}", file=aside)
    return 0
