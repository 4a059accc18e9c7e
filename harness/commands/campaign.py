"""`fencepost campaign FILE.toml`: a matrix of runs on fresh clusters — one after another or
side by side (`--parallel N`), all of them or a shard (`--shard I/N`) — with progress,
`junit.xml`, each run judged against what the file expects of it (`[[expect]]`), and at the
end the campaign's report (report.html, summary.json, summary.csv) and the refreshed
results/index.html (harness/campaign/; docs/CAMPAIGNS.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.harness.commands.arguments import positive

NAME = "campaign"
HELP = ("run a campaign: a matrix of configurations and seeds, each run judged against what it should yield; "
        "ends with report.html, summary.json and summary.csv")
EXAMPLES = (
    ("fencepost campaign campaigns/ci.toml", "the CI campaign: hw must lose writes, kip320 must not (a few minutes)"),
    ("fencepost campaign campaigns/ci.toml --plan", "the runs and how long they should take; nothing runs"),
    ("fencepost campaign campaigns/truncation.toml --parallel 2", "two runs at once, each on its own subnet"),
    ("fencepost campaign campaigns/truncation.toml --shard 2/4", "this machine's quarter of the runs"),
    ("fencepost campaign campaigns/truncation.toml --resume", "continue the latest directory, skipping finished runs"),
    ("fencepost campaign campaigns/ci.toml --format markdown >> \"$GITHUB_STEP_SUMMARY\"",
     "the summary table on a GitHub Actions run's page"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fencepost.harness.campaign.summary_formats import FORMATS

    parser.add_argument("file", type=Path, metavar="FILE.toml", help="the campaign (campaigns/*.toml)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest directory of this campaign, skipping finished runs")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="the results folder; campaigns go to RESULTS/campaigns/NAME/ (default results)")
    parser.add_argument("--plan", action="store_true",
                        help="list the runs with what each should yield and an estimate of the time; run nothing")
    parser.add_argument("--parallel", type=positive("runs"), default=1, metavar="N",
                        help="runs at once, each in its own process on its own subnet (default 1)")
    parser.add_argument("--shard", metavar="I/N",
                        help="run only the I-th of N shares of the runs (positions I, I+N, ...): N machines "
                             "split a campaign; `fencepost summarize` (or analyze) merges their directories")
    parser.add_argument("--until-failure", action="store_true",
                        help="start no run after the first that does not yield what it should (a surprise or a crash)")
    parser.add_argument("--unknown-fails", action="store_true",
                        help="a run without a verdict (unknown) fails the campaign (default: reported, not a failure)")
    parser.add_argument("--subnet", metavar="CIDR",
                        help="the first run's netns subnet; with --parallel, slot k takes the k-th block after it "
                             "(default: the spec's, else 10.77.0.0/24)")
    parser.add_argument("--baseline", metavar="SYSTEM[:TRUNCATION]",
                        help="the configuration the report tests every row against (default: the file's "
                             "`baseline`, else the row above)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="the summary printed on stdout at the end: text, json (summary.json) or markdown "
                             "(for $GITHUB_STEP_SUMMARY); progress goes to stderr")



def run(args: argparse.Namespace) -> int:
    from fencepost.harness.campaign.conductor import Options, campaign_dir, run_campaign
    from fencepost.harness.campaign.execute import run_planned
    from fencepost.harness.campaign.plan import PlannedRun, Shard, load_campaign
    from fencepost.harness.campaign.slots import check_slots
    from fencepost.harness.index.page import refresh_index

    campaign = load_campaign(args.file)
    if args.shard:
        campaign = campaign.sharded(Shard.parse(args.shard))
    # every slot's subnet, for every run, refused now (exit 254, --plan too) if a backend would refuse it
    check_slots([run.spec for run in campaign.runs], args.subnet, args.parallel)
    if args.plan:
        return _print_plan(campaign, args)
    directory = campaign_dir(args.results, campaign, args.resume)
    options = Options(parallel=args.parallel, until_failure=args.until_failure, unknown_fails=args.unknown_fails,
                      subnet=args.subnet)

    def run_one(planned: PlannedRun, where: Path) -> dict:
        return run_planned(planned.spec, where)

    try:
        code = run_campaign(campaign, directory, run_one, options=options,
                            after_run=lambda outcome: refresh_index(args.results))
    except BaseException:  # interrupted: the report of the runs done, without hiding why it stopped
        try:
            _report(directory, args)
        except Exception as e:
            print(f"fencepost campaign: the report was not written: {type(e).__name__}: {e}", file=sys.stderr)
        refresh_index(args.results)
        raise
    _report(directory, args)
    refresh_index(args.results)
    return code


def _report(directory: Path, args: argparse.Namespace) -> None:
    from fencepost.harness.campaign.report import write_campaign_report
    from fencepost.harness.campaign.summary_formats import render

    if not any(directory.glob("runs/*/outcome.json")):
        return
    summary, written = write_campaign_report([directory], baseline=args.baseline)
    text = render(summary, args.format, directory)
    sys.stdout.write(text)
    sys.stdout.flush()
    print(f"report: {written['report']}; summary: {written['json']}, {written['csv']}", file=sys.stderr)


def _print_plan(campaign, args: argparse.Namespace) -> int:
    from fencepost.harness.campaign.estimate import duration, estimate

    share = campaign.share
    estimates, total = estimate(share, args.results, args.parallel)
    shard = f" (shard {campaign.shard} of {len(campaign.runs)} planned)" if campaign.shard else ""
    print(f"campaign {campaign.name}: {len(share)} runs{shard}, {args.parallel} at a time")
    width = max((len(r.run_id) for r in share), default=6)
    print(f"  {'run':<{width}}  {'system':<12} {'truncation':<10} {'faults':<22} {'expected':<18} estimate")
    for e in estimates:
        run = e.run
        how = f"learned from {e.learned_from} earlier run(s)" if e.learned_from else "modelled"
        print(f"  {run.run_id:<{width}}  {run.spec.system:<12} {run.spec.truncation:<10} "
              f"{(run.spec.faults or 'none'):<22} {run.expected.describe():<18} {duration(e.seconds)} ({how})")
    learned = sum(1 for e in estimates if e.learned_from)
    print(f"estimated time: {duration(total)} ({learned} of {len(estimates)} run estimates learned from earlier "
          f"runs under {args.results}; the rest modelled as the time limit plus setup, heal, reads and check)")
    return 0
