"""Benchmark of `fencepost check` on a large synthetic run: prints figures,
asserts nothing about time.

The run: 1,000,000 history lines of 3 partitions, 10 producer processes and 2
consumers (`GenConfig(seed=1, lines=1_000_000, consumer_share=0.12,
p_reassign=0.001, p_crash=0.001)`: consumers that mostly read on from where
they are, as two real consumers would), generated once into --dir.

Each stage runs in a fresh process, with --jobs N and with --jobs 1:
  parse   load_run: history.jsonl and final.jsonl into the checkers' input
          (final.jsonl read in a second process when jobs > 1)
  check   check_run, as `fencepost check --no-write` does it: parse, every
          check of every partition, the verdict, results.json's document
          (jobs > 1: the run loaded in a forked process, which forks one
          worker per partition, 3 on 2 CPUs, and exits without freeing)
Wall-clock is the headline (what a user waits for: from the start of the
stage to its end, the freeing of the loaded run included), CPU time of the
process tree beside it. Memory, from one more run of each stage: the peak of
the summed proportional set size (PSS) of the stage's process tree, sampled
every 50 ms by this process (reading smaps slows the process it reads, hence
the separate run) -- the memory the tree really held; and `getrusage`'s peak
RSS of the stage process and of its largest child (RSS counts the pages a
child shares with its parent in both).

Measured on the 2-CPU development machine, 1M lines (its speed varied by up
to 1.4x within minutes: old and new code were run in alternation).
  2026-11-21 (a220a50), alone: jobs 2 parse 4.3, check 7.7 s (130k ops/s).
  2026-11-22 morning (d45c734): jobs 2 parse 2.9-3.8, check 6.0-6.7 s
    (149k-166k ops/s); peak PSS 1.22 GiB.
  2026-11-22 midday (735dba6): jobs 2 parse 2.7-3.0, check 5.4-6.1 s
    (163k-187k ops/s), jobs 1 check 9.0-11.1 s; peak PSS 1.5 GiB.
  2026-11-22 afternoon: jobs 2 parse 2.9-3.1, check 5.38-5.62 s best of 3
    (178k-186k ops/s; a slow hour), best single run 5.03 s (198.8k ops/s);
    jobs 1 check 9.0-9.4 s; peak PSS 1.5 GiB; in 8 alternating pairs of
    single runs (jobs 2) faster than 735dba6 in all 8, median ratio 0.90.
    (Before the first round of work: check 37 s, jobs 1 only.)
  2026-11-22 later, a fresh machine about 1.7x slower (fast test set 2:21-2:49
    instead of 1:35): jobs 2 parse 4.86, check 9.88 s (101k ops/s; CPU 17.4 s
    against 12.0 s with jobs 1); `unseen` then built the details of only the
    anomalies results.json shows: faster in 5 of 5 alternating pairs, median 0.97.

Where the time goes with jobs 2: the run is loaded and checked in a forked
process (which, like its workers, keeps what it built referenced until it
exits: freeing it object by object took 0.4 s there, 0.05-0.07 s in each
worker). There,
history.jsonl is read by the fast path (harness/fast_history.py: msgspec
decodes each line into typed structs in C, a Python loop pairs and groups
into Send and Poll Structs) in about 2.5 s on one CPU, while final.jsonl is
read on the other (harness/fast_final.py, 1.1 s, pickled back in 0.2 s,
unpickled in 0.1 s); then one worker per partition, three sharing the two
CPUs, copies its partition (0.45-0.55 s) and checks it (1.0-1.2 s). Checking
one partition in two halves on the two CPUs instead (the plan when workers
may not outnumber jobs) costs more: each half copies the partition and builds
its observations again. (The old reader: 3.5 s for history.jsonl alone.)

Also tried on 2026-11-22 and not kept: poll records not shared between polls
in the fast reader (a lookup per record saved, 0.3 s of the load on its own):
no faster in the whole check, and peak PSS 2.2-2.3 GiB, over the 2 GiB limit.

Tried on 2026-11-22 and measured slower, so not kept: workers forked before
the load that each read both files but build only the partitions they check
(a plan drawn from the first 4 MiB of the history; every line still decoded
and judged by each). Side by side, --jobs 2, beside a test run: 10.2-11.0 s
against 8.1-8.5 s for the code here. Per worker: history.jsonl 2.2 s with a
third of the partitions left out, final.jsonl 1.0 s (decoding is most of
both, and each worker decodes everything), and its partitions, built
interleaved, checked in 2.1 s as built or 0.5 s copy + 1.15 s check.

Tried later on 2026-11-22, not kept (README "Benchmarks" has the figures):
history.jsonl read in two processes (the tail sent back as msgpack and
joined): two processes on these two vCPUs each run 30-40% slower than one
alone, and the tail's encoding, sending, decoding and joining cost 0.7 s, so
no faster; partitions loaded as packed columns and built by each worker
instead of copied: 0.43-0.54 s against 0.51-0.71 s; lines read in 1 MiB
chunks with the UTF-8 check per chunk: median 1.04 of the old time.

Usage: python bench/check_bench.py [--dir DIR] [--jobs N] [--lines N] [--seed S] [--repeat R]
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

STAGE_CODE = {
    "parse": "from harness.loading import load_run\n"
             "run = load_run(RUN, parallel=JOBS > 1)\n"
             "ops = run.counts.ops\n"
             "del run\n",
    "check": "from harness.checking import check_run\n"
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
        generate_to_dir(run_dir, GenConfig(seed=args.seed, lines=args.lines, consumer_share=0.12,
                                           p_reassign=0.001, p_crash=0.001))
        print(f"generated {run_dir} in {time.perf_counter() - started:.1f} s")
    lines = sum(1 for _ in open(run_dir / "history.jsonl", "rb"))
    final_lines = sum(1 for _ in open(run_dir / "final.jsonl", "rb"))
    size = (run_dir / "history.jsonl").stat().st_size / 2**20
    final_size = (run_dir / "final.jsonl").stat().st_size / 2**20
    print(f"history.jsonl: {lines:,} lines ({size:.0f} MiB); final.jsonl: {final_lines:,} lines "
          f"({final_size:.0f} MiB); {os.cpu_count()} CPUs")
    print(f"{'jobs':>4} {'stage':<6} {'wall s':>7} {'ops/s':>9} {'CPU s':>6} "
          f"{'peak PSS':>9} {'RSS main':>9} {'RSS child':>10}")
    for jobs in dict.fromkeys((args.jobs, 1)):
        figures = {stage: _best(run_dir, stage, jobs, args.repeat) for stage in STAGE_CODE}
        for stage, f in figures.items():
            if f is None:
                continue
            print(f"{jobs:>4} {stage:<6} {f['seconds']:>7.2f} {f['ops'] / f['seconds']:>9,.0f} "
                  f"{f['cpu']:>6.2f} {f['pss_mb']:>5.0f} MiB {f['rss_mb']:>5.0f} MiB "
                  f"{f['child_rss_mb']:>6.0f} MiB")
        if all(figures.values()):
            ratio = figures["check"]["seconds"] / figures["parse"]["seconds"]
            print(f"{jobs:>4} check/parse = {ratio:.2f} (wall)")


def _best(run_dir: Path, stage: str, jobs: int, repeat: int) -> dict | None:
    runs = [_run_stage(run_dir, stage, jobs, sample=False) for _ in range(repeat)]
    done = [r for r in runs if r is not None]
    if not done:
        return None
    best = min(done, key=lambda r: r["seconds"])
    sampled = _run_stage(run_dir, stage, jobs, sample=True)
    best["pss_mb"] = sampled["pss_mb"] if sampled else float("nan")
    return best


def _run_stage(run_dir: Path, stage: str, jobs: int, sample: bool) -> dict | None:
    code = RUNNER.format(root=str(ROOT), run=str(run_dir), jobs=jobs, code=STAGE_CODE[stage])
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
            print(f"{stage} (jobs {jobs}) failed:\n{err.read()[-2000:]}")
            return None
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
