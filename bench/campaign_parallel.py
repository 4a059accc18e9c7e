"""Runs per hour of a campaign, one run at a time against N side by side (`fencepost campaign
--parallel N`): the campaign (default campaigns/ci.toml) is run once per N given, in one
process, one after another (rounds alternate the order, so the machine's load falls on
both alike), each into a fresh results folder; prints per N the wall time, the runs per hour
and its ratio to N = 1, the median seconds per run (a run's own time: side by side each run
takes longer), the CPU time of the campaign's processes (user and system time of every
process it started and reaped: brokers, controller, the harness) over its wall time, and
whether every run yielded what it was expected to. Asserts nothing.

Needs what the campaign needs (root for netns). Usage:
    python bench/campaign_parallel.py [--campaign campaigns/ci.toml] [--parallel 1 2] [--rounds 1]
        [--subnet 10.77.0.0/24] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# --smoke's campaign: the own broker on the process backend (no root, no netns), 2 runs of 1 s
SMOKE_CAMPAIGN = """name = "smoke"
[base]
system = "own"
backend = "process"
time_limit = 1
"nemesis.faults" = "none"

[matrix]
seed = [1, 2]
"""


def run_campaign(campaign: Path, parallel: int, results: Path, subnet: str | None) -> dict:
    command = [sys.executable, "-m", "fencepost.harness.cli", "campaign", str(campaign), "--results", str(results),
               "--parallel", str(parallel), "--format", "json"]
    if subnet:
        command += ["--subnet", subnet]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"the campaign at --parallel {parallel} printed no summary (exit {done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
    seconds = [r["seconds"] for r in summary["runs"]]
    return {"parallel": parallel, "wall": wall, "cpu": cpu, "runs": len(seconds),
            "per_hour": len(seconds) * 3600 / wall, "median_run": statistics.median(seconds),
            "green": summary["green"], "exit": done.returncode}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", type=Path, default=ROOT / "campaigns" / "ci.toml")
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--subnet", help="the first slot's subnet (default: the campaign's)")
    parser.add_argument("--keep", type=Path, help="keep the results folders here")
    parser.add_argument("--smoke", action="store_true",
                        help="under a minute: a campaign of 2 runs of 1 s of the own broker on the process "
                             "backend (written into the temporary folder), --parallel 1 2, one round; covers "
                             "the campaigns, their JSON summaries and the table, not netns nor the figures' worth")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fp-campaign-bench-")) if args.keep is None else args.keep
    if args.smoke:
        home.mkdir(parents=True, exist_ok=True)
        args.campaign, args.parallel, args.rounds = home / "smoke.toml", [1, 2], 1
        args.campaign.write_text(SMOKE_CAMPAIGN)
    measured: dict[int, list[dict]] = {n: [] for n in args.parallel}
    try:
        for round_ in range(args.rounds):
            order = args.parallel if round_ % 2 == 0 else list(reversed(args.parallel))
            for n in order:
                result = run_campaign(args.campaign.resolve(), n, home / f"round{round_}-n{n}", args.subnet)
                measured[n].append(result)
                print(f"round {round_ + 1}, --parallel {n}: {result['runs']} runs in {result['wall']:.0f} s "
                      f"({result['per_hour']:.0f} runs/hour), median run {result['median_run']:.1f} s, "
                      f"CPU {result['cpu']:.0f} s ({result['cpu'] / result['wall']:.2f} cores busy on average), "
                      f"{'green' if result['green'] else 'RED'}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(home, ignore_errors=True)
    base = statistics.median(r["per_hour"] for r in measured[args.parallel[0]])
    print(f"\n{'parallel':>8}  {'runs/hour':>9}  {'ratio':>5}  {'median run':>10}  {'cores busy':>10}  all green")
    for n, results in measured.items():
        per_hour = statistics.median(r["per_hour"] for r in results)
        busy = statistics.median(r["cpu"] / r["wall"] for r in results)
        print(f"{n:>8}  {per_hour:>9.0f}  {per_hour / base:>5.2f}  "
              f"{statistics.median(r['median_run'] for r in results):>9.1f}s  {busy:>10.2f}  "
              f"{all(r['green'] for r in results)}")
    print(f"({os.cpu_count()} CPUs; campaign {args.campaign.name}; {args.rounds} round(s))")


if __name__ == "__main__":
    main()
