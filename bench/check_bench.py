"""Benchmark of `fencepost check` on a large synthetic run: prints figures,
asserts nothing about time.

The run: 1,000,000 history lines of 3 partitions, 10 producer processes and 2
consumers (`GenConfig(seed=1, lines=1_000_000, consumer_share=0.12,
p_reassign=0.001, p_crash=0.001)`: consumers that mostly read on from where
they are, as two real consumers would), generated once into --dir.

Each stage runs in a fresh process, with --jobs N and with --jobs 1:
  parse   load_run: history.jsonl and final.jsonl into the checkers' input,
          every partition built (with jobs > 1 the C reader reads both files
          at once, on two threads)
  check   check_run, as `fencepost check --no-write` does it: parse, every
          check of every partition, the verdict, results.json's document
          (jobs > 1: the run loaded in a forked process, which forks one
          worker per partition, 3 on 2 CPUs, each building its partition,
          and exits without freeing)
Each stage also runs with the Python reader alone (the C reader switched
off, as on a machine without a C compiler: the exact readers,
harness/rundir/history.py and harness/rundir/final_reader.py, read both files), in alternation
with the C reader's; the ratios C / Python of parse and check are printed, of
wall-clock and of CPU time (--no-python-reader leaves them out). On a machine
busy with other work wall-clock varies by 2x from run to run: compare CPU
ratios there, or pairs run side by side.

Wall-clock is the headline (what a user waits for: from the start of the
stage to its end, the freeing of the loaded run included), CPU time of the
process tree beside it. Memory, from one more run of each stage: the peak of
the summed proportional set size (PSS) of the stage's process tree, sampled
every 50 ms by this process (reading smaps slows the process it reads, hence
the separate run) -- the memory the tree really held; and `getrusage`'s peak
RSS of the stage process and of its largest child (RSS counts the pages a
child shares with its parent in both).

Measured on the 2-CPU development machine, 1M lines:
  2026-11-25, quiet hour, the C reader: jobs 2 parse 1.40, check 3.25 s
    (308k ops/s), peak PSS 918 MiB; jobs 1 parse 1.38, check 5.34 s. Its
    check took 0.47-0.64 of the time of the code before it (8f46a97, msgspec
    decoding), side by side.
  2026-11-26, a chaos campaign running beside it (medians of 4 side-by-side
    pairs): C / Python reader, jobs 2: parse 0.20 (CPU), 0.26 (wall); check
    0.60 (CPU), 0.64 (wall), peak PSS 916 against 1,476 MiB; jobs 1: parse
    0.22, check 0.62. The Python reader alone (the exact readers) against the
    msgspec readers it replaced (c45cb1d): parse 1.50x, check 1.17x the CPU
    (1.52x, 1.30x wall); the C reader's check unchanged (0.94x CPU).

Where the time goes with jobs 2 (quiet hour): the run is loaded in a
forked process, where the C reader reads history.jsonl (0.76 s) and, on a
second thread at the same time, final.jsonl (0.33 s) into tables of C
records, without the GIL and without a Python object per line. That process
then forks one worker per partition (3 sharing the 2 CPUs); each builds its
own partition's objects from the tables (0.15 s: each value string and each
record made once, the final read's records shared with the polls that
returned them, all of one partition lying together in memory, so no copy is
needed) and checks it (1.3 s alone: observe 0.39, offset checks 0.33-0.45,
poll order 0.11, unseen 0.18, the linearizability witness 0.24). The checks,
in Python, are three quarters of the CPU time. Without the C reader, each
partition is copied into fresh memory (`loading.fresh_copy`) before its
check, as the loaded objects lie scattered over the heap. Designs measured
and not kept: docs/BENCHMARKS.md, "Every bench script".

Usage: python bench/check_bench.py [--dir DIR] [--jobs N] [--lines N] [--seed S] [--repeat R]
                                   [--no-python-reader]
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

# Prepended to a stage to measure the Python reader alone (as without the C
# reader: the exact readers read both files).
PYTHON_READER = ("from fencepost.harness.check import native_load\n"
                 "native_load.available = lambda: False\n")

STAGE_CODE = {
    "parse": "from fencepost.harness.check.loading import load_run\n"
             "run = load_run(RUN, parallel=JOBS > 1)\n"
             "ops = run.counts.ops\n"
             "del run\n",
    "check": "from fencepost.harness.check.checking import check_run\n"
             "ops = check_run(RUN, write=False, out=None, jobs=JOBS).results['checked']['ops']\n",
}

RUNNER = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
RUN, JOBS = Path({run!r}), {jobs}
started, cpu_started = time.perf_counter(), time.process_time()
{code}
seconds = time.perf_counter() - started
cpu = time.process_time() - cpu_started
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"seconds": seconds, "cpu": cpu + children.ru_utime + children.ru_stime,
                  "ops": ops,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB
                  "child_rss_mb": children.ru_maxrss / 1024}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="reuse (or create) the run here")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes for the parallel figures (default: one per CPU)")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each stage this many times; the fastest is shown")
    parser.add_argument("--no-python-reader", action="store_true",
                        help="leave out the side-by-side figures of the Python reader alone")
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: a 3,000-line run generated into a temporary folder, every stage "
                             "with --jobs 2 (not 1), both readers, the PSS sampling; covers every line printed, "
                             "not the figures' worth (a run that small is all start-up)")
    args = parser.parse_args()
    if args.smoke:
        args.lines, args.repeat, args.jobs = 3_000, 1, 2

    scratch = None if args.dir else Path(tempfile.mkdtemp(prefix="fencepost-bench-"))
    run_dir = args.dir or scratch / "run"
    try:
        _measure(run_dir, args)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch)


def _measure(run_dir: Path, args: argparse.Namespace) -> None:
    if not (run_dir / "history.jsonl").exists():
        from tests.support.synth.generate import GenConfig, generate_to_dir

        started = time.perf_counter()
        generate_to_dir(run_dir, GenConfig(seed=args.seed, lines=args.lines, consumer_share=0.12,
                                           p_reassign=0.001, p_crash=0.001))
        print(f"generated {run_dir} in {time.perf_counter() - started:.1f} s")
    lines = sum(1 for _ in open(run_dir / "history.jsonl", "rb"))
    final_lines = sum(1 for _ in open(run_dir / "final.jsonl", "rb"))
    size = (run_dir / "history.jsonl").stat().st_size / 2**20
    final_size = (run_dir / "final.jsonl").stat().st_size / 2**20
    print(f"history.jsonl: {lines:,} lines ({size:.0f} MiB); final.jsonl: {final_lines:,} lines "
          f"({final_size:.0f} MiB); {os.cpu_count()} CPUs")
    print(f"{'jobs':>4} {'stage':<22} {'wall s':>7} {'ops/s':>9} {'CPU s':>6} "
          f"{'peak PSS':>9} {'RSS main':>9} {'RSS child':>10}")
    readers = [False] if args.no_python_reader else [False, True]
    for jobs in (args.jobs,) if args.smoke else dict.fromkeys((args.jobs, 1)):
        # The stages with the C reader and with the Python reader alone, in alternation.
        figures = {(stage, python): _best(run_dir, stage, jobs, args.repeat, python)
                   for stage in STAGE_CODE for python in readers}
        for (stage, python), f in figures.items():
            if f is None:
                continue
            name = f"{stage}{' (Python reader)' if python else ''}"
            print(f"{jobs:>4} {name:<22} {f['seconds']:>7.2f} {f['ops'] / f['seconds']:>9,.0f} "
                  f"{f['cpu']:>6.2f} {f['pss_mb']:>5.0f} MiB {f['rss_mb']:>5.0f} MiB "
                  f"{f['child_rss_mb']:>6.0f} MiB")
        for python in readers:
            parse, check = figures[("parse", python)], figures[("check", python)]
            if parse and check:
                which = " (Python reader)" if python else ""
                print(f"{jobs:>4} check/parse{which} = {check['seconds'] / parse['seconds']:.2f} (wall)")
        for stage in STAGE_CODE if len(readers) == 2 else ():
            c, python = figures[(stage, False)], figures[(stage, True)]
            if c and python:
                print(f"{jobs:>4} {stage}, C reader / Python reader = "
                      f"{c['seconds'] / python['seconds']:.2f} (wall), {c['cpu'] / python['cpu']:.2f} (CPU)")


def _best(run_dir: Path, stage: str, jobs: int, repeat: int, python: bool) -> dict | None:
    runs = [_run_stage(run_dir, stage, jobs, python, sample=False) for _ in range(repeat)]
    done = [r for r in runs if r is not None]
    if not done:
        return None
    best = min(done, key=lambda r: r["seconds"])
    sampled = _run_stage(run_dir, stage, jobs, python, sample=True)
    best["pss_mb"] = sampled["pss_mb"] if sampled else float("nan")
    return best


def _run_stage(run_dir: Path, stage: str, jobs: int, python: bool, sample: bool) -> dict | None:
    code = RUNNER.format(root=str(ROOT), run=str(run_dir), jobs=jobs,
                         code=(PYTHON_READER if python else "") + STAGE_CODE[stage])
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=err)
        peak_pss = 0
        while process.poll() is None:
            if sample:
                peak_pss = max(peak_pss, _tree_pss_kb(process.pid))
            time.sleep(0.05)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            # a stage that cannot run makes every figure after it meaningless: stop, exit 1
            raise SystemExit(f"{stage} (jobs {jobs}{', Python reader' if python else ''}) failed:\n"
                             f"{err.read()[-2000:]}")
        figures = json.loads(out.read().strip().splitlines()[-1])
    figures["pss_mb"] = peak_pss / 1024
    return figures


def _tree_pss_kb(root: int) -> int:
    """Summed PSS of `root` and its descendants (Linux /proc), in KiB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


if __name__ == "__main__":
    main()
