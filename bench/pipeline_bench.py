"""Benchmark of `fencepost analyze` on Spark against the single-process checker, over the same
synthetic campaign; prints figures, asserts nothing about time.

The campaign: --runs runs (default 200) of --lines history lines each (default 50,000:
10,000,000 ops in all), 3 partitions, 10 producers, 2 consumers. --distinct of them (default
20) are generated (tests/support/synth, distinct seeds); every fourth of those has a lost write
planted (tests/support/synth/plant.py), so a quarter of the campaign is invalid. The others are
hard links of those files, which the checkers cannot tell apart and which saves minutes of
generation. Both checkers must find the same invalid runs, or the benchmark fails.

Stages, each in a fresh process, side by side in one run:
  single   one Python process checking the runs one after another (`check_run`, jobs=1,
           no write) — the single-process checker
  single2  the same split over two processes (what `fencepost check` does with two CPUs)
  spark    `fencepost analyze DIR --out OUT` on Spark local[*]: one applyInPandas group per
           run (Parquet copies, load, check), verdicts and the report (JVM start included)
  spark1   with --scaling: the same on local[1], for the speed-up from one core to all

Usage: python bench/pipeline_bench.py [--dir DIR] [--runs 200] [--lines 50000] [--distinct 20]
                                      [--scaling]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SINGLE = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from fencepost.harness.check.checking import check_run
runs = [Path(p) for p in json.loads(sys.argv[1])]
started = time.perf_counter()
ops = invalid = 0
for run in runs:
    outcome = check_run(run, write=False, out=None, jobs=1)
    ops += outcome.results["checked"]["ops"]
    invalid += outcome.valid is False
print(json.dumps({{"seconds": time.perf_counter() - started, "ops": ops, "invalid": invalid}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="reuse (or create) the campaign here")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--distinct", type=int, default=20, help="runs generated; the rest are hard links")
    parser.add_argument("--scaling", action="store_true", help="also run Spark on one core (local[1])")
    parser.add_argument("--smoke", action="store_true",
                        help="under a minute: a campaign of 6 runs of 300 lines (4 generated, one with a planted "
                             "lost write, 2 hard links) in a temporary folder, every stage, Spark on local[*]; "
                             "covers the generation, both checkers, their agreement and the ratios printed, not "
                             "the figures' worth (Spark's JVM start is most of it)")
    args = parser.parse_args()
    if args.smoke:
        args.dir, args.runs, args.lines, args.distinct, args.scaling = None, 6, 300, 4, False
    scratch = None if args.dir else Path(tempfile.mkdtemp(prefix="fencepost-pipeline-"))
    campaign = args.dir or scratch / "campaign"
    try:
        runs = ensure_campaign(campaign / "runs", args.runs, args.lines, args.distinct)
        measure(campaign, runs, args.scaling)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch)


def ensure_campaign(folder: Path, count: int, lines: int, distinct: int) -> list[Path]:
    from tests.support.synth.generate import GenConfig, generate, generate_to_dir
    from tests.support.synth.plant import plant

    runs = [folder / f"run-{i:04d}" for i in range(count)]
    started = time.perf_counter()
    made = 0
    for i, run in enumerate(runs):
        if (run / "history.jsonl").exists():
            continue
        if i < distinct:
            config = GenConfig(seed=i + 1, lines=lines, consumer_share=0.12, p_reassign=0.001, p_crash=0.001)
            if i % 4 == 3:
                plant("lost-write/missing", generate(config), i).run.write(run)
            else:
                generate_to_dir(run, config)
        else:
            run.mkdir(parents=True)
            for name in ("history.jsonl", "final.jsonl", "test.json"):
                os.link(runs[i % distinct] / name, run / name)
        made += 1
        print(f"\rgenerating the campaign: {i + 1}/{count} runs", end="", file=sys.stderr, flush=True)
    if made:
        print(f"\rgenerated {made} runs in {time.perf_counter() - started:.1f} s" + " " * 20, file=sys.stderr)
    return runs


def measure(campaign: Path, runs: list[Path], scaling: bool) -> None:
    history_mb = sum((r / "history.jsonl").stat().st_size for r in runs) / 2**20
    print(f"campaign: {len(runs)} runs, {history_mb:,.0f} MiB of history; {os.cpu_count()} CPUs")
    single = single_process([runs])
    halves = [runs[0::2], runs[1::2]]
    single2 = single_process(halves)
    stages = {"single": single, "single2": single2, "spark": analyze(campaign, None)}
    if scaling:
        stages["spark1"] = analyze(campaign, "local[1]")
    ops = single["ops"]
    print(f"{'stage':<8} {'wall s':>8} {'ops/s':>11} {'invalid runs':>13}")
    for name, figure in stages.items():
        print(f"{name:<8} {figure['seconds']:>8.1f} {ops / figure['seconds']:>11,.0f} {figure['invalid']:>13}")
    spark = stages["spark"]
    print(f"spark / single  = {spark['seconds'] / single['seconds']:.2f} (target <= 1.5)")
    print(f"spark / single2 = {spark['seconds'] / single2['seconds']:.2f}")
    if scaling:
        print(f"spark local[1] / local[*] = {stages['spark1']['seconds'] / spark['seconds']:.2f} "
              f"(speed-up from 1 to {os.cpu_count()} cores)")
    if len({figure["invalid"] for figure in stages.values()}) != 1:
        sys.exit("the checkers disagree on the number of invalid runs")


def single_process(shares: list[list[Path]]) -> dict:
    """The runs checked by one process per share, side by side; the slowest share's time."""
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", SINGLE.format(root=str(ROOT)),
                               json.dumps([str(r) for r in share])], stdout=subprocess.PIPE, text=True)
             for share in shares]
    results = [json.loads(p.communicate()[0]) for p in procs]
    return {"seconds": time.perf_counter() - started, "ops": sum(r["ops"] for r in results),
            "invalid": sum(r["invalid"] for r in results)}


def analyze(campaign: Path, master: str | None) -> dict:
    out = campaign / "analysis"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "analyze", str(campaign / "runs"),
                           "--out", str(out), *(["--master", master] if master else [])],
                          cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"fencepost analyze failed ({done.returncode}):\n{done.stderr[-3000:]}")
    invalid = sum(int(line.split(",")[4]) for line in (out / "summary.csv").read_text().splitlines()[1:])
    return {"seconds": seconds, "invalid": invalid}


if __name__ == "__main__":
    main()
