"""`fencepost summarize CAMPAIGN_DIR... [--out DIR] [--format F] [--baseline B]`: a campaign's
report again — report.html, summary.json, summary.csv — from its directory, or one report from
the directories of its shards (`fencepost campaign --shard I/N` on several machines, the
results on shared storage) (harness/campaign/report.py). Without Spark; `fencepost analyze`
gives the same numbers for campaigns too big for one machine."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "summarize"
HELP = "write a campaign's report (report.html, summary.json, summary.csv) again, or one report for its shards"
EXAMPLES = (
    ("fencepost summarize results/campaigns/ci/latest", "the report of the latest ci campaign, again"),
    ("fencepost summarize /shared/results/campaigns/truncation/2026* --out /shared/truncation-report",
     "one report for the shards of a campaign run on several machines"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fencepost.harness.campaign.summary_formats import FORMATS

    parser.add_argument("paths", type=Path, nargs="+", metavar="CAMPAIGN_DIR",
                        help="a campaign directory, or the directories of one campaign's shards")
    parser.add_argument("--out", type=Path,
                        help="where the files go (default: the campaign directory; for shards, `merged` beside them)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="what is printed: text, json (summary.json) or markdown (for $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--baseline", metavar="SYSTEM[:TRUNCATION]",
                        help="test every row of a fault group against this configuration (default: the campaign "
                             "file's `baseline`, else the row above)")


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.campaign.report import write_campaign_report
    from fencepost.harness.campaign.summary_formats import render

    directories = [p.resolve() for p in args.paths]
    summary, written = write_campaign_report(directories, args.out, args.baseline)
    sys.stdout.write(render(summary, args.format, written["report"].parent))
    print(f"report: {written['report']}; summary: {written['json']}, {written['csv']}", file=sys.stderr)
    return summary.exit_code
