"""`fencepost campaign FILE.toml [--resume]`: a matrix of runs, one after another on fresh
clusters, with progress across the campaign, `junit.xml`, and the campaign's exit code
(harness/campaign/; DESIGN.md §3.5, §4.6)."""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

NAME = "campaign"
HELP = "run a campaign: a matrix of configurations and seeds, one run after another"
EXAMPLES = (
    ("fencepost campaign campaigns/truncation.toml", "80 runs: every truncation mode under four faults"),
    ("fencepost campaign campaigns/truncation.toml --resume", "continue the latest directory, skipping finished runs"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE.toml", help="the campaign (campaigns/*.toml)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest directory of this campaign, skipping finished runs")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="the results folder; campaigns go to RESULTS/campaigns/NAME/ (default results)")


def run(args: argparse.Namespace) -> int:
    from harness.campaign.plan import PlannedRun, load_campaign
    from harness.campaign.runner import campaign_dir, run_campaign
    from harness.run.progress import Progress
    from harness.run.runner import run_test
    from harness.verdict import verdict_word

    campaign = load_campaign(args.file)
    directory = campaign_dir(args.results, campaign, args.resume)

    def run_one(planned: PlannedRun, where: Path) -> dict:
        outcome = run_test(replace(planned.spec, results=str(where)), Progress())
        check = outcome.check
        return {"verdict": verdict_word(check.valid if check else None), "exit_code": outcome.exit_code,
                "anomaly_counts": dict(check.results.get("anomaly_counts", {})) if check else {},
                "run_dir": str(Path(outcome.run_dir).resolve()), "problems": list(outcome.problems),
                "timings": {k: round(v, 2) for k, v in outcome.timings.items()}}

    return run_campaign(campaign, directory, run_one)
