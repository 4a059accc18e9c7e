"""`fencepost analyze CAMPAIGN_DIR... [--master URL] [--out DIR]`: a campaign's runs (or any
folders of runs) checked on Spark through PySpark and compared per configuration
(harness/analysis/; docs/CAMPAIGNS.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "analyze"
HELP = "check a campaign's runs on Spark and compare them per configuration (report, plots, CSV, JUnit)"
EXAMPLES = (
    ("fencepost analyze results/campaigns/truncation/latest", "check a campaign on Spark, local[*]"),
    ("fencepost analyze CAMPAIGN_DIR --master spark://host:7077 --conf spark.executor.memory=4g",
     "on a standalone Spark cluster"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", type=Path, nargs="+", metavar="CAMPAIGN_DIR",
                        help="campaign directories, run directories, or folders holding runs")
    parser.add_argument("--master", help="the Spark master URL (default local[*])")
    parser.add_argument("--out", type=Path, help="where analysis/ goes (default: CAMPAIGN_DIR/analysis)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, e.g. spark.executor.memory=4g (repeatable)")
    parser.add_argument("--baseline", metavar="SYSTEM[:TRUNCATION]",
                        help="test every row of a fault group against this configuration (as `fencepost compare "
                             "--baseline`; default: a campaign's `baseline`, else the row above)")


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.analysis.runs import analyzed_runs, find_expectations
    from fencepost.harness.errors import BadInput
    from fencepost.harness.rundir.campaigns import is_campaign, read_plan

    confs = spark_settings(args.conf)
    runs = analyzed_runs(args.paths)
    baseline = args.baseline or next((read_plan(p).get("baseline") for p in args.paths
                                      if p.is_dir() and is_campaign(p) and read_plan(p).get("baseline")), None)
    out = args.out or (args.paths[0] / "analysis")
    try:
        from fencepost.harness.analysis.job import run_job, spark_session
    except ImportError as e:
        raise BadInput(f"fencepost analyze needs PySpark, pandas and pyarrow ({e}): pip install 'fencepost[spark]'")
    spark = spark_session(args.master, confs)
    try:
        verdicts = run_job(spark, runs, out)
    finally:
        spark.stop()
    from fencepost.harness.analysis.output import configuration_rows, write_outputs
    from fencepost.harness.compare.formats import render

    written = write_outputs(verdicts, out, args.paths[0].resolve().name, baseline, find_expectations(args.paths))
    print(render(configuration_rows(verdicts, baseline), against=baseline))
    print(f"report: {written['report']}; summary: {written['summary']}; junit: {written['junit']}", file=sys.stderr)
    return 0


def spark_settings(pairs: list[str]) -> dict[str, str]:
    from fencepost.harness.errors import BadInput

    settings = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise BadInput(f"--conf {pair!r}: give KEY=VALUE, e.g. --conf spark.executor.memory=4g")
        settings[key.strip()] = value
    return settings
