"""Crash safety of `fencepost run` itself: N short chaos runs (own broker, netns, nemesis
kill,pause,partition), each kill -9'd at a seeded random moment between 0 and its expected
duration. After each kill the run directory must still be judged and the machine restored:

- history.jsonl, if the run made one, is read by `fencepost check`, which answers
  0, 1 or 2 (a verdict, or unknown) — never 254/255 or a traceback;
- `fencepost cleanup` exits 0 and leaves nothing of the run's cluster: no namespace,
  link, iptables rule or marked process, and no process the harness started at all
  (this script is the children's subreaper, so orphans come back to it and are counted).

Only the harness pid is killed, not its process group: that is the harder case (an OOM
kill or `kill -9 PID`): its brokers are orphaned and must be found by cleanup.
A Ctrl-\\ in a terminal would signal the whole group — the harness's own children in it
die with it, which leaves less to clean, not more.

Cleanup is scoped by default (`fencepost cleanup --cluster run-<id>`): the machine is
shared, and a bare `fencepost cleanup` removes every cluster, other people's campaigns
included. `--exclusive` (a machine to yourself) runs the bare `fencepost cleanup` and
also requires the machine's global counts (tests/support/crash_support.machine_counts) to
be what they were before each run.

    python bench/crash_runs.py [--runs 20] [--seed 1] [--time-limit 8] [--expected 15] [--exclusive]

Prints a table per run and a summary; exits 1 if any run fails a property, 254 on bad
arguments or a machine that cannot run it (not root), with a live progress line on stderr.
Measured (2 shared cores, a campaign running beside it), `python bench/crash_runs.py`
(seed 1, 20 runs, 164 s): 19 killed (setup 3, main 7, heal 1, final reads 3, check 4,
before any output 1), 1 ended first; 19/19 histories answered by `fencepost check`
(8 valid, 11 unknown, 0 invalid, no 254/255, no traceback); cleanup clean 20/20, having
removed 160 leftovers (6-14 per run killed before teardown); no orphan left.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from fencepost.clusters.hosts.local_process import marked_processes  # noqa: E402
from fencepost.clusters.hosts.netns import network  # noqa: E402

SUBNET = "10.79.{}.0/24"  # this bench's own range; campaigns use 10.77.0.0/16
PR_SET_CHILD_SUBREAPER = 36
ORPHAN_GRACE_S = 10.0  # unmarked orphans (an `ip` command in flight at the kill) may finish first
EXIT_BAD_INPUT = 254


@dataclass
class CrashRun:
    """What one killed run left, and whether each property held."""
    index: int
    subnet: str
    kill_at: float
    killed: bool = False  # False: the run ended on its own before its kill time
    harness_exit: int | None = None
    phase: str = "start"
    run_dir: Path | None = None
    history_lines: int | None = None  # None: no history.jsonl
    torn_tail: bool = False
    final: bool = False
    check_exit: int | None = None
    verdict: str = "-"
    cleanup_exit: int | None = None
    removed: int = 0  # items cleanup removed: what the killed harness had left
    leftovers: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def cluster(self) -> str | None:
        return f"run-{self.run_dir.name[-6:]}" if self.run_dir is not None else None


def measure(runs: int = 20, seed: int = 1, workdir: Path | None = None, time_limit: float = 8.0,
            expected: float = 15.0, exclusive: bool = False, show=None, backend: str = "netns") -> list[CrashRun]:
    """Run, kill, check and clean up `runs` runs; their results (see CrashRun)."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="fp-crash-"))
    rng = random.Random(seed)
    show = show or (lambda text: None)
    results = []
    # Children this process already had (in a test suite, e.g. a dockerd a fixture started)
    # are neither orphans of a killed harness nor ours to reap.
    keep = frozenset(_children(zombies=False)) | frozenset(_children(zombies=True))
    with subreaper(keep):
        baseline = _machine_counts() if exclusive else None
        subnets = _free_subnets() if backend == "netns" else iter(lambda: "-", None)
        for i, subnet in zip(range(runs), subnets):
            run = CrashRun(i, subnet, round(rng.uniform(0.0, expected), 2))
            show(f"run {i + 1}/{runs}: {subnet}, kill at {run.kill_at:.1f} s")
            _run_and_kill(run, workdir, time_limit, seed * 1000 + i, keep, backend)
            show(f"run {i + 1}/{runs}: {'killed in ' if run.killed else ''}{run.phase}; fencepost check")
            _check(run)
            show(f"run {i + 1}/{runs}: fencepost cleanup")
            _cleanup(run, exclusive, keep)
            if baseline is not None:
                after = _machine_counts()
                if after != baseline:
                    run.failures.append(f"machine counts {after} differ from before {baseline}")
            results.append(run)
    return results


# -- one run ---------------------------------------------------------------------------------


def _run_and_kill(run: CrashRun, workdir: Path, time_limit: float, seed: int, keep: frozenset[int],
                  backend: str = "netns") -> None:
    here = workdir / f"run{run.index}"
    here.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "fencepost.harness.cli", "run", "--name", f"crash{run.index}",
            "--results", str(here / "results"), "--time-limit", f"{time_limit:g}",
            "--nemesis", "kill,pause,partition" if backend == "netns" else "kill,pause", "--nemesis-interval", "2",
            "--backend", backend, "--rate", "50", "--concurrency", "2", "--seed", str(seed)]
    if backend == "netns":
        argv += ["--backend-option", f"subnet={run.subnet}"]
    with open(here / "stdout", "wb") as out, open(here / "stderr", "wb") as err:
        harness = subprocess.Popen(argv, cwd=here, stdout=out, stderr=err, start_new_session=True,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            run.harness_exit = harness.wait(timeout=run.kill_at)
        except subprocess.TimeoutExpired:
            os.kill(harness.pid, signal.SIGKILL)  # the harness alone: its children are orphaned
            harness.wait()
            run.killed = True
    _reap_orphans(keep)
    phases = re.findall(r"^fencepost: (\w[\w ]*)$", (here / "stderr").read_text(errors="replace"), re.M)
    run.phase = phases[-1] if phases else "start"
    if not run.killed:
        run.phase = f"ended ({run.harness_exit})"
    found = sorted(p for p in (here / "results" / f"crash{run.index}").glob("2*") if p.is_dir())
    run.run_dir = found[-1] if found else None
    if run.run_dir is not None:
        history = run.run_dir / "history.jsonl"
        if history.exists():
            data = history.read_bytes()
            run.history_lines = data.count(b"\n")
            run.torn_tail = bool(data) and not data.endswith(b"\n")
        run.final = (run.run_dir / "final.jsonl").exists()


def _check(run: CrashRun) -> None:
    if run.history_lines is None:
        return
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "check", str(run.run_dir), "--jobs", "1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    run.check_exit = done.returncode
    if done.returncode not in (0, 1, 2) or "Traceback" in done.stderr + done.stdout:
        run.failures.append(f"fencepost check exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
        return
    try:
        valid = orjson.loads((run.run_dir / "results.json").read_bytes()).get("valid")
        run.verdict = {True: "valid", False: "invalid"}.get(valid, "unknown")
    except (OSError, orjson.JSONDecodeError) as e:
        run.failures.append(f"fencepost check answered {done.returncode} but results.json is unreadable: {e}")


def _cleanup(run: CrashRun, exclusive: bool, keep: frozenset[int]) -> None:
    cluster = run.cluster
    if cluster is None and not exclusive:
        run.leftovers = _leftovers(None, keep)  # no run directory: no cluster can have been made
    else:
        scope = [] if exclusive else ["--cluster", cluster]
        argv = [sys.executable, "-m", "fencepost.harness.cli", "cleanup", *scope]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
        run.cleanup_exit = done.returncode
        run.removed = sum(line.startswith("removed ") for line in done.stdout.splitlines())
        if done.returncode != 0:
            run.failures.append(f"fencepost cleanup exited {done.returncode}: {done.stderr[-1500:]}")
        if not exclusive:
            digest = network.short_hash(cluster)
            foreign = [line for line in done.stdout.splitlines()
                       if line.startswith("removed ") and cluster not in line and digest not in line]
            if foreign:
                run.failures.append(f"cleanup --cluster {cluster} removed what was not its own: {foreign}")
        _reap_orphans(keep)
        run.leftovers = _leftovers(cluster, keep)
    if run.leftovers:
        run.failures.append(f"left after cleanup: {run.leftovers}")


def _leftovers(cluster: str | None, keep: frozenset[int]) -> list[str]:
    """What of `cluster` is still on the machine, and which of the harness's orphans still run."""
    found = []
    if cluster is not None:
        found += [f"namespace {ns}" for ns in network.namespaces() if network.owned_namespace(ns, [cluster])]
        found += [f"link {name}" for name in network.link_names() if network.owned_link(name, [cluster])]
        found += [f"iptables rule {' '.join(r)}" for r in network.our_rules() if network.owned_rule(r, [cluster])]
        found += [f"marked process {pid}" for pid in marked_processes(cluster)]
    deadline = time.monotonic() + ORPHAN_GRACE_S
    while (orphans := _orphans(keep)) and time.monotonic() < deadline:
        time.sleep(0.2)
        _reap_orphans(keep)
    return found + [f"orphan {pid} ({cmd})" for pid, cmd in orphans.items()]


# -- orphans come back to us -----------------------------------------------------------------


@contextmanager
def subreaper(keep: frozenset[int]) -> Iterator[None]:
    """Make this process the subreaper of its descendants: a killed harness's orphans become
    our children (instead of init's), so that any of them still running can be seen."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        _reap_orphans(keep)


def _reap_orphans(keep: frozenset[int]) -> None:
    """Collect exited orphans: only children that came back to us, never a child this process
    had before the runs (a test suite's daemon, say), which its owner waits for."""
    for pid in _children(zombies=True):
        if pid not in keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _orphans(keep: frozenset[int]) -> dict[int, str]:
    """{pid: command} of our living children that we did not have before the runs."""
    return {pid: cmd for pid, cmd in _children(zombies=False).items() if pid not in keep}


def _children(zombies: bool) -> dict[int, str]:
    """{pid: command} of this process's children: the exited ones (`zombies`) or the living."""
    me = str(os.getpid())
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if ppid == me and (state == "Z") == zombies:
            found[int(entry.name)] = cmdline.strip()[:120]
    return found


# -- the machine -----------------------------------------------------------------------------


def _free_subnets() -> Iterator[str]:
    for k in range(1, 255):
        subnet = SUBNET.format(k)
        if not network.subnet_users(subnet):
            yield subnet


def _machine_counts() -> dict[str, int]:
    from tests.support.crash_support import machine_counts
    return machine_counts()


def foreign_clusters() -> list[str]:
    """The fencepost namespaces on this machine now (a bare `fencepost cleanup` would remove them)."""
    return [ns for ns in network.namespaces() if network.owned_namespace(ns)]


# -- output ----------------------------------------------------------------------------------


def table(results: list[CrashRun]) -> str:
    rows = [("run", "subnet", "kill at", "phase reached", "history lines", "final", "check", "verdict",
             "removed", "cleanup", "ok")]
    for r in results:
        lines = "-" if r.history_lines is None else f"{r.history_lines}{' +torn' if r.torn_tail else ''}"
        rows.append((str(r.index), r.subnet, f"{r.kill_at:.1f} s", r.phase, lines, "yes" if r.final else "no",
                     "-" if r.check_exit is None else str(r.check_exit), r.verdict,
                     "-" if r.cleanup_exit is None else str(r.removed),
                     "-" if r.cleanup_exit is None else ("clean" if not r.leftovers and r.cleanup_exit == 0
                                                         else "LEFTOVERS"),
                     "yes" if not r.failures else "NO"))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    text = "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
    for r in results:
        for failure in r.failures:
            text += f"\nrun {r.index}: {failure}"
    return text


def summary(results: list[CrashRun]) -> str:
    with_history = [r for r in results if r.history_lines is not None]
    answered = [r for r in with_history if r.check_exit in (0, 1, 2) and not any("check" in f for f in r.failures)]
    clean = [r for r in results if not r.leftovers and r.cleanup_exit in (0, None)
             and not any("cleanup" in f or "machine" in f for f in r.failures)]
    verdicts = {v: sum(r.verdict == v for r in with_history) for v in ("valid", "invalid", "unknown")}
    return (f"runs {len(results)} (killed {sum(r.killed for r in results)}, "
            f"ended before their kill {sum(not r.killed for r in results)}); "
            f"histories made {len(with_history)}, readable (check answered 0/1/2) {len(answered)}/{len(with_history)} "
            f"(valid {verdicts['valid']}, invalid {verdicts['invalid']}, unknown {verdicts['unknown']}); "
            f"cleanup clean {len(clean)}/{len(results)} ({sum(r.removed for r in results)} leftovers removed); "
            "runs failing a property "
            f"{sum(bool(r.failures) for r in results)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments (default 1)")
    parser.add_argument("--time-limit", type=float, default=8.0, help="each run's --time-limit (default 8)")
    parser.add_argument("--expected", type=float, default=15.0,
                        help="a whole run's expected duration in seconds: kills fall in [0, this] (default 15)")
    parser.add_argument("--workdir", type=Path, help="where the runs go (default a fresh temporary folder)")
    parser.add_argument("--exclusive", action="store_true",
                        help="the machine is yours: bare `fencepost cleanup`, global counts compared")
    parser.add_argument("--smoke", action="store_true",
                        help="under a minute: 1 run of the own broker on the process backend (no root, no "
                             "netns; nemesis kill,pause), killed 3.8 s after its start (seed 2), then checked and "
                             "cleaned up (scoped), orphans counted; covers every step, the table and the summary, "
                             "not netns leftovers (namespaces, links, iptables rules)")
    args = parser.parse_args(argv)
    backend = "netns"
    if args.smoke:
        # seed 2 puts the kill at 3.8 s: in setup or the main phase, with the cluster's brokers up
        args.runs, args.seed, args.time_limit, args.expected, args.exclusive = 1, 2, 1.0, 4.0, False
        backend = "process"
    if backend == "netns" and os.geteuid() != 0:
        print("crash_runs: the netns backend needs root: run it as root", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.runs < 1 or args.expected <= 0 or args.time_limit <= 0:
        print(f"crash_runs: --runs {args.runs}, --expected {args.expected}, --time-limit {args.time_limit}: "
              "give positive numbers", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.exclusive and foreign_clusters():
        print(f"crash_runs: --exclusive, but fencepost clusters are live on this machine "
              f"({', '.join(foreign_clusters()[:4])}...): a bare `fencepost cleanup` would remove them; "
              "run without --exclusive", file=sys.stderr)
        return EXIT_BAD_INPUT
    live = sys.stderr.isatty()

    def show(text: str) -> None:
        sys.stderr.write(f"\r{text[:110]:<110}" if live else f"crash_runs: {text}\n")
        sys.stderr.flush()

    started = time.monotonic()
    results = measure(args.runs, args.seed, args.workdir, args.time_limit, args.expected, args.exclusive, show,
                      backend)
    if live:
        sys.stderr.write("\n")
    print(table(results))
    print(summary(results))
    print(f"took {time.monotonic() - started:.0f} s; kill -9 of the harness pid only; cleanup "
          f"{'bare (all clusters)' if args.exclusive else 'scoped (--cluster run-<id>)'}")
    return 1 if any(r.failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
