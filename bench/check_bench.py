"""Benchmark of `fencepost check`'s input side on a large synthetic run: prints
figures, asserts nothing about time.

Each stage runs in a fresh process (so peak RSS is that stage's own):
  parse      iter_history over every line (read + validate)
  pair       HistoryReader.operations() (parse + pairing)
  load       load_run: parse + pair + group per partition + final.jsonl
  check      check_run with linearizability as test.json says (default on)
  check-nolin  load, every partition's check with the search off, the verdict

Usage: python bench/check_bench.py [--lines N] [--seed S] [--dir DIR] [--stages ...]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGE_CODE = {
    "parse": "from harness.history import iter_history\n"
             "n = sum(1 for _ in iter_history(RUN / 'history.jsonl'))",
    "pair": "from harness.history import HistoryReader\n"
            "n = sum(1 for _ in HistoryReader(RUN / 'history.jsonl').operations())",
    "load": "from harness.loading import load_run\n"
            "run = load_run(RUN)\n"
            "n = sum(len(p.sends) + len(p.polls) for p in run.partitions.values())",
    "check": "from harness.checking import check_run\n"
             "n = check_run(RUN, write=False, out=None).exit_code",
    "check-nolin": "from harness.checking import check_partitions\n"
                   "from harness.loading import load_run\n"
                   "from harness.verdict import decide\n"
                   "run = load_run(RUN)\n"
                   "run.options.linearizability = False\n"
                   "n = decide(run, check_partitions(run)).exit_code",
}

RUNNER = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
RUN = Path({run!r})
started, cpu_started = time.perf_counter(), time.process_time()
{code}
seconds = time.perf_counter() - started
print(json.dumps({{"seconds": seconds, "cpu": time.process_time() - cpu_started, "result": n,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="reuse (or create) the run here")
    parser.add_argument("--stages", nargs="+", default=list(STAGE_CODE), choices=list(STAGE_CODE))
    args = parser.parse_args()

    scratch = None if args.dir else Path(tempfile.mkdtemp(prefix="fencepost-bench-"))
    run_dir = args.dir or scratch / "run"
    try:
        _measure(run_dir, args)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch)


def _measure(run_dir: Path, args: argparse.Namespace) -> None:
    if not (run_dir / "history.jsonl").exists():
        from tests.synth.generate import GenConfig, generate_to_dir

        started = time.perf_counter()
        generate_to_dir(run_dir, GenConfig(seed=args.seed, lines=args.lines))
        print(f"generated {run_dir} in {time.perf_counter() - started:.1f} s")
    lines = sum(1 for _ in open(run_dir / "history.jsonl", "rb"))
    final_lines = sum(1 for _ in open(run_dir / "final.jsonl", "rb"))
    size = (run_dir / "history.jsonl").stat().st_size / 2**20
    print(f"history: {lines:,} lines ({size:.0f} MiB); final.jsonl: {final_lines:,} lines")
    print("(lines/s and s per 1M from CPU time, which other load on the machine disturbs less)")
    print(f"{'stage':<12} {'wall s':>7} {'CPU s':>7} {'lines/s':>10} {'s per 1M':>9} {'peak RSS':>9}")
    for stage in args.stages:
        code = RUNNER.format(root=str(ROOT), run=str(run_dir), code=STAGE_CODE[stage])
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{stage:<12} failed:\n{done.stderr[-2000:]}")
            continue
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        cpu = figures["cpu"]
        print(f"{stage:<12} {figures['seconds']:>7.2f} {cpu:>7.2f} {lines / cpu:>10,.0f} "
              f"{cpu * 1e6 / lines:>9.2f} {figures['max_rss_mb']:>7.0f} MB")


if __name__ == "__main__":
    main()
