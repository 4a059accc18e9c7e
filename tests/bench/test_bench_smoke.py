"""Every script under bench/ runs in its smoke mode (`python3 bench/X.py --smoke`: the same code
path at tiny sizes, docs/BENCHMARKS.md) as a real process, exits 0 and prints the figure lines it
promises, so that no bench rots unseen.

The fast smokes run side by side: the first test to need one starts them all in a small pool
(longest first), and each test waits for its own. The smokes that need a JVM (stock Kafka,
Spark) or several `fencepost run`s take most of a minute each and are marked slow.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT

BENCH = ROOT / "bench"
POOL = 4  # smokes at once: several of them mostly wait (on brokers, gdb, librdkafka's timers)
TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Smoke:
    figures: tuple[str, ...]  # regular expressions (MULTILINE) the output must hold
    slow: str = ""  # why the smoke is too long for the fast set
    fuse: bool = False  # mounts the lazy filesystem: root and /dev/fuse


SMOKES: dict[str, Smoke] = {
    "broker_bench": Smoke((r"^produce  acks=1 +2,000 msgs .* [\d,]+ msgs/s", r"^fetch +2,000 msgs .* [\d,]+ msgs/s",
                           r"^latency  acks=1 at 500 msgs/s .* p99 [\d.]+ ms")),
    "campaign_parallel": Smoke((r"^ +1 +\d+ +1\.00 .* True$", r"^ +2 +\d+ +[\d.]+ .* True$"),
                               slow="4 runs of the own broker through `fencepost campaign`: about 55 s"),
    "check_bench": Smoke((r"^ +2 check/parse = [\d.]+ \(wall\)$",
                          r"^ +2 check, C reader / Python reader = [\d.]+ \(wall\), [\d.]+ \(CPU\)$")),
    "client_log_bench": Smoke((r"^ClientLog ring +\d+ lines +[\d.]+ us CPU/line$",
                               r"^discard \(confluent-kafka's callback\) +\d+ lines +[\d.]+ us CPU/line$")),
    "crash_runs": Smoke((r"^0 +- +3\.8 s +\w",
                         r"^runs 1 \(killed 1, .* cleanup clean 1/1 .* runs failing a property 0$")),
    "kafka_releases": Smoke((r"^4\.\d+\.\d+ +kraft +scala [\d.]+ +resolve .* acked 20/20 read 20 +config: ok$",),
                            slow="a stock Kafka broker's JVM on the process backend: about 55 s"),
    "kip101_reach": Smoke((r"^ +2 +[\d.]+ +\d+ +[\d.]+%$", r"^ +4 +[\d.]+ +\d+ +[\d.]+%$")),
    "lazyfs_bench": Smoke((r"^  lazy +[\d.]+ MiB/s",
                           r"passthrough / disk [\d.]+ +lazy / disk [\d.]+ +lazy / passthrough [\d.]+"), fuse=True),
    "lazyfs_kafka_bench": Smoke((r"^throughput lazy / plain: [\d.]+", r"^p99 latency lazy / plain: [\d.]+$"),
                                slow="two own clusters with lazy disks, producer processes spawned: about 20 s",
                                fuse=True),
    "librdkafka_deadlock": Smoke((r"^confluent-kafka installed trial 0: (STUCK|resumed) \(\d/1\)$",
                                  r"^installed +\d/1 +[\d.]+ +\[[\d.]+, [\d.]+\]")),
    "linear_bench": Smoke((r"linearizable True, states explored \d+", r"[\d,]+ search ops/s",
                           r"search: linearizable False", r"minimisation: [\d.]+ s, \d+ searches")),
    "mutation_bench": Smoke((r"^all +21 ", r"^commands run: check 21")),
    "own_lazy_bench": Smoke((r"^\| plain disk, --flush os \| [\d,]+ \| 1\.00 \|$",
                             r"^\| lazy filesystem, --flush os \| [\d,]+ \| [\d.]+ \|$"), fuse=True),
    "pipeline_bench": Smoke((r"^spark / single  = [\d.]+", r"^spark +[\d.]+ +[\d,]+ +1$"),
                            slow="Spark's JVM: one to two minutes"),
    "producer_load": Smoke((r"^throughput acks=1: 2,000 msgs in [\d.]+ s: [\d,]+ msgs/s$",
                            r"^latency acks=1 at 500 msgs/s .* p99 [\d.]+ ms$")),
    "replication_bench": Smoke((r"^\(a\) produce acks=all RF 3 .* [\d,]+ msgs/s", r"^\(b\) latency .* p99 [\d.]+ ms",
                                r"^\(c\) failover: .* first acked write on the new leader [\d.]+ s after the kill")),
    "soundness": Smoke((r"^lost-write +1 +1 +100\.0%", r"^clean: runs 3, false positives 0",
                        r"^--json document: \d+ top-level keys$")),
    "storage_bench": Smoke((r"^  fsync: +\d+ batches/s", r"^fetch reads, max_bytes 64 KiB: +[\d.]+ MiB/s$",
                            r"^dump-log zstd +: +\d+ records/s")),
    "systems_bench": Smoke((r"^own/stock +[\d.]+ +[\d.]+$", r"^own \(2nd\) +[\d.]+ +[\d.]+ +[\d.]+ +0$"),
                           slow="two own clusters and two `fencepost run`s: about 45 s"),
    "workload_bench": Smoke((r"^ +5 +[\d,]+ +[\d,]+ +[\d.]+ +[\d,]+ +[\d.]+ +[\d,]+ +[\d.]+ +\d+ +[\d.]+$",)),
}
# Not programs: covered by another script's smoke (test_gdb_script_smoke).
COVERED = {"librdkafka_deadlock_gdb": "librdkafka_deadlock"}  # its --smoke --force holds a trial with gdb


def run_smoke(name: str, *more: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--smoke", *more], cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return done, time.monotonic() - started


# longest first, so that the pool's last smokes are short
FAST_ORDER = ("replication_bench", "librdkafka_deadlock", "crash_runs", "workload_bench",
              "own_lazy_bench", "mutation_bench", "check_bench", "broker_bench", "producer_load", "soundness",
              "storage_bench", "client_log_bench", "lazyfs_bench", "kip101_reach", "linear_bench")


@pytest.fixture(scope="module")
def fast_smokes():
    with ThreadPoolExecutor(POOL) as pool:
        fuse = os.geteuid() == 0 and os.path.exists("/dev/fuse")
        futures: dict[str, Future] = {name: pool.submit(run_smoke, name) for name in FAST_ORDER
                                      if fuse or not SMOKES[name].fuse}
        yield futures
        for future in futures.values():
            future.cancel()


def skip_without_fuse(name: str) -> None:
    if SMOKES[name].fuse and (os.geteuid() != 0 or not os.path.exists("/dev/fuse")):
        pytest.skip(f"bench/{name}.py mounts the lazy filesystem: it needs root and /dev/fuse")


def check_output(name: str, done: subprocess.CompletedProcess, seconds: float, figures: tuple[str, ...] = ()) -> None:
    said = f"bench/{name}.py --smoke exited {done.returncode} after {seconds:.0f} s:\n{done.stdout[-3000:]}\n" \
           f"--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    assert "Traceback" not in done.stderr, said
    for figure in figures or SMOKES[name].figures:
        assert re.search(figure, done.stdout, re.MULTILINE), f"no line matching {figure!r} in\n{said}"


@pytest.mark.parametrize("name", [n for n in SMOKES if not SMOKES[n].slow])
def test_smoke(name: str, fast_smokes) -> None:
    skip_without_fuse(name)
    done, seconds = fast_smokes[name].result(timeout=TIMEOUT_S * 2)
    check_output(name, done, seconds)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SMOKES if SMOKES[n].slow])
def test_slow_smoke(name: str) -> None:
    skip_without_fuse(name)
    check_output(name, *run_smoke(name))


@pytest.mark.slow
def test_gdb_script_smoke() -> None:
    """bench/librdkafka_deadlock_gdb.py is a gdb script, not a program: `librdkafka_deadlock.py
    --smoke --force` runs it in gdb on a trial (half a minute: gdb's detach is slow)."""
    if shutil.which("gdb") is None:
        pytest.skip("no gdb on PATH")
    done, seconds = run_smoke("librdkafka_deadlock", "--force")
    check_output("librdkafka_deadlock", done, seconds, (r"^smoke: one trial, held with gdb$",
                 r"^confluent-kafka installed trial 0: .*gdb: (HELD|ABSENT|NOT-HIT)"))


def test_every_bench_script_has_a_smoke() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py")}
    assert scripts == set(SMOKES) | set(COVERED), (
        f"bench scripts without a smoke here: {sorted(scripts - set(SMOKES) - set(COVERED))}; "
        f"listed but gone: {sorted(set(SMOKES) | set(COVERED) - scripts)}")
    assert set(FAST_ORDER) == {n for n in SMOKES if not SMOKES[n].slow}
    for name in SMOKES:
        assert "--smoke" in (BENCH / f"{name}.py").read_text(), f"bench/{name}.py has no --smoke flag"
    for script, by in COVERED.items():
        assert f"{script}.py" in (BENCH / f"{by}.py").read_text(), f"bench/{by}.py does not run bench/{script}.py"


def test_systems_bench_reads_the_first_op_timing_the_run_logs(tmp_path: Path) -> None:
    """systems_bench read a 'run to first op' the run no longer logged in that form (a dict's repr)
    and a log time of another form: it now reads the verdict line the runner writes, through the
    readers beside its writers."""
    from bench.systems_bench import logged_first_op
    from fencepost.harness.run.runner import RunOutcome, verdict_line
    from fencepost.harness.rundir.run_dirs import close_logger, run_logger

    log = run_logger(tmp_path)
    before = time.time()
    log.info("run %s", tmp_path)
    log.info("%s", verdict_line(RunOutcome(tmp_path, None, None, {"run to first op": 1.26, "last op to verdict": 3.0})))
    close_logger(log)
    found = logged_first_op((tmp_path / "fencepost.log").read_text())
    assert found is not None
    first_line, timing = found
    assert timing == pytest.approx(1.3)
    assert before - 1 <= first_line <= time.time() + 1


def test_check_bench_python_reader_switches_off_the_reader_its_stages_use() -> None:
    """check_bench's `PYTHON_READER` prelude patched a bare `harness` package, a second copy beside
    the `fencepost.harness` the stages import: its Python-reader figures were the C reader's."""
    from bench.check_bench import PYTHON_READER, STAGE_CODE

    assert all("from fencepost.harness." in code for code in STAGE_CODE.values())
    done = subprocess.run([sys.executable, "-c", PYTHON_READER + "from fencepost.harness.check import native_load\n"
                           "print(native_load.available())"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
