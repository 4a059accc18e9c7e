"""`fencepost compare PATH... [--out DIR]`: runs or campaigns side by side — per system,
truncation and fault: runs, invalid runs, the invalid-run rate with its Wilson 95%
interval, the anomalies found; printed as a table, written as compare.csv and
compare.png (harness/compare/)."""
from __future__ import annotations

import argparse
from pathlib import Path

NAME = "compare"
HELP = "compare runs or campaigns per protocol version and fault: table, CSV and plot"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                        help="run directories, campaign directories, or folders holding them")
    parser.add_argument("--out", type=Path, default=Path("results") / "compare",
                        help="where compare.csv and compare.png go (default results/compare)")


EXAMPLES = (
    ("fencepost compare results/", "every run under results/, per system, truncation and faults"),
    ("fencepost compare results/campaigns/truncation/latest --out /tmp/cmp", "one campaign, written elsewhere"),
)


def run(args: argparse.Namespace) -> int:
    from harness.compare.collect import collect
    from harness.compare.plot import plot_rates
    from harness.compare.table import render, rows, to_csv

    table = rows(collect(args.paths))
    print(render(table))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.csv").write_text(to_csv(table))
    plot = plot_rates(table, args.out / "compare.png")
    print(f"table: {args.out / 'compare.csv'}; plot: {plot}")
    return 0
