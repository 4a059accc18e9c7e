"""One run, phase by phase (docs/RUN.md): setup, main (traffic and nemesis side by
side), heal, quiesce, final reads, teardown, check, report.

Each phase has a bounded time (the spec's `timeouts`, the main phase its time limit).
Heal always runs — on leaving the main phase normally, on an error, on Ctrl-C or
SIGTERM (nemesis.HealGuard) — and teardown always runs once a cluster exists. The
history is written as it happens (harness/rundir/history.py), so a run killed in any phase
leaves every op up to the last fsync; `fencepost check RUN_DIR` answers for it.

The traffic (workloads driven by the scheduler) is reached through
harness/run/traffic.py; the report through harness/report when it is there.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fencepost.clusters import Cluster, ClusterConfigError, ClusterSpec, HostError, TopicSpec
from fencepost.harness.check.checking import CheckOutcome, check_run
from fencepost.harness.errors import EXIT_CRASH, EXIT_UNKNOWN, BadInput
from fencepost.harness.processes.interrupts import sigterm_as_interrupt
from fencepost.harness.provenance import versions
from fencepost.harness.run.progress import Progress, Status
from fencepost.harness.run.spec import TestSpec, cluster_options
from fencepost.harness.run.traffic import Traffic, start_traffic, write_final_reads
from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.final_writer import add_final_lines
from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.harness.rundir.names import CLIENTS_DIR, FINAL_FILE, HISTORY_FILE, LOG_FILE, NODES_DIR, TEST_FILE
from fencepost.harness.rundir.record import timings_text, verdict_word
from fencepost.harness.rundir.run_dirs import close_logger, new_run_dir, run_logger
from fencepost.nemesis import HealGuard, Nemesis, make_schedule

MAIN_GRACE_S = 30.0  # the nemesis may finish the action in progress after the time limit
HALTING_STOP_S = 2.0  # a broker that logged it is halting: SIGTERM, then SIGKILL after this


@dataclass
class RunOutcome:
    run_dir: Path
    check: CheckOutcome | None
    report: Path | None
    timings: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    last_op_at: float | None = None  # monotonic time when the traffic stopped
    failures: list[str] = field(default_factory=list)  # parts of the harness that crashed while the run went on

    @property
    def exit_code(self) -> int:
        """docs/FORMATS.md, exit codes; a harness part that crashed (the nemesis) makes it 255
        whatever the verdict of the history: the run did not do what was asked."""
        if self.failures:
            return EXIT_CRASH
        return self.check.exit_code if self.check is not None else EXIT_UNKNOWN


class RunError(RuntimeError):
    """A phase failed so that the run cannot go on; the message names the phase."""


def run_test(spec: TestSpec, progress: Progress) -> RunOutcome:
    """The whole run. SIGTERM is taken as Ctrl-C (KeyboardInterrupt) so that heal and teardown run."""
    with sigterm_as_interrupt():
        return _run_test(spec, progress)


def _run_test(spec: TestSpec, progress: Progress) -> RunOutcome:
    started = time.monotonic()
    results = Path(spec.results)
    try:
        run_dir = new_run_dir(results, spec.name)
    except (OSError, ValueError) as e:
        raise BadInput(f"results = {spec.results!r}: cannot make a run directory there ({e}); "
                       "give a folder you can write") from None
    log = run_logger(run_dir)
    outcome = RunOutcome(run_dir, None, None)
    write_atomically(run_dir / TEST_FILE, orjson.dumps(spec.to_json(), option=orjson.OPT_INDENT_2))
    log.info("run %s: %s", run_dir, orjson.dumps(spec.to_json()).decode())
    try:
        with HistoryWriter(run_dir / HISTORY_FILE) as writer:
            recorder = Recorder(writer)
            cluster = _setup(spec, run_dir, progress, log)
            _record_provenance(spec, cluster, run_dir, log)
            try:
                _main_heal_and_final_reads(RunContext(spec, cluster, recorder, run_dir, progress, log,
                                                      outcome, started))
            finally:
                _teardown(cluster, run_dir, progress, log, outcome)
        progress.phase("check")
        outcome.check = check_run(run_dir, out=None)
        if outcome.last_op_at is not None:
            outcome.timings["last op to verdict"] = time.monotonic() - outcome.last_op_at
        outcome.report = _report(run_dir, log, outcome)
        log.info("%s", verdict_line(outcome))
        return outcome
    finally:
        close_logger(log)


def verdict_text(check: CheckOutcome | None) -> str:
    """The verdict in words and the anomalies found: `invalid (lost-write 3, ...)`;
    `unknown` when the run was not checked."""
    text = verdict_word(check.valid if check is not None else None)
    counts = check.results.get("anomaly_counts", {}) if check is not None else {}
    found = ", ".join(f"{name} {n}" for name, n in counts.items() if n)
    return text + (f" ({found})" if found else "")


def verdict_line(outcome: RunOutcome) -> str:
    """What fencepost.log says at the end of a run, in words: `verdict: invalid (lost-write 3,
    ...); timings: run to first op 1.7 s, ...; problems: none`."""
    timings = timings_text(outcome.timings)
    problems = "; ".join(outcome.problems) if outcome.problems else "none"
    return f"verdict: {verdict_text(outcome.check)}; timings: {timings or 'none'}; problems: {problems}"


def _setup(spec: TestSpec, run_dir: Path, progress: Progress, log: logging.Logger) -> Cluster:
    progress.phase("setup")
    cluster_spec = ClusterSpec(f"run-{run_dir.name[-6:]}", spec.system, spec.nodes, spec.backend,
                               dict(spec.backend_options), cluster_options(spec))
    try:
        cluster = Cluster.up(cluster_spec, run_dir / "cluster", timeout=spec.timeouts.setup,
                             on_step=lambda step: log.info("setup: %s", step))
    except ClusterConfigError as e:
        raise BadInput(str(e)) from None
    except HostError as e:
        raise RunError(f"setup: the cluster did not come up: {e}") from None
    try:
        cluster.create_topic(TopicSpec(spec.topic.name, spec.topic.partitions, spec.topic.replication_factor,
                                       spec.topic.configs() or None), spec.timeouts.setup)
    except BaseException:
        _teardown(cluster, run_dir, progress, log, None)
        raise
    log.info("cluster up: bootstrap %s", cluster.bootstrap)
    return cluster


def _record_provenance(spec: TestSpec, cluster: Cluster, run_dir: Path, log: logging.Logger) -> None:
    """test.json again, with what the run was made with (`versions`: fencepost, Python, the client
    library, the system's release and runtime, and what the running cluster says of itself, e.g.
    Kafka's finalized features) and the protocol under test in words; atomically."""
    try:
        observed = cluster.system.observed_provenance(cluster.hosts)
    except HostError as e:
        observed = {"observed": f"not asked: {e}"}
    test = {**spec.to_json(), "versions": {**versions(), **cluster.system.provenance(), **observed},
            "protocol": cluster.system.protocol_description()}
    write_atomically(run_dir / TEST_FILE, orjson.dumps(test, option=orjson.OPT_INDENT_2))
    log.info("versions: %s; protocol: %s", test["versions"], test["protocol"])


def run_nemesis(nemesis: Any, duration: float, log: logging.Logger, crashes: list[BaseException]) -> None:
    """The nemesis thread: a crash (a bug, not a failed action: those are recorded and the loop
    goes on) is kept in `crashes` and logged, not just printed by the thread machinery."""
    try:
        nemesis.run(duration=duration)
    except Exception as e:
        crashes.append(e)
        log.exception("the nemesis crashed; its faults stop here")


@dataclass
class RunContext:
    """What every phase after setup works with: the spec, the cluster, the history's recorder,
    the run directory, the progress display, the run's log and the outcome being filled in."""
    spec: TestSpec
    cluster: Cluster
    recorder: Recorder
    run_dir: Path
    progress: Progress
    log: logging.Logger
    outcome: RunOutcome
    started: float  # monotonic time the run began

    @property
    def topic(self) -> str:
        return self.spec.topic.name


def _main_heal_and_final_reads(run: RunContext) -> None:
    """Main, heal, recover, quiesce, final reads and the replica logs, in that order."""
    nemesis = _make_nemesis(run)
    partitions = run.cluster.partitions(run.topic)
    traffic = start_traffic(run.spec, run.cluster.bootstrap, run.recorder, partitions,
                            client_logs=run.run_dir / CLIENTS_DIR)
    crashes = _main_and_heal(run, traffic, nemesis)
    _finish_halting(run.cluster, run.outcome, run.log)
    if nemesis is not None or run.spec.clients.crash_interval:  # faults, or clients crashed: let them recover
        _recover(run, traffic)
    for crash in crashes:
        run.outcome.failures.append(f"the nemesis crashed: {type(crash).__name__}: {crash}; its faults stopped "
                                    f"there (healed as usual; the traceback is in {LOG_FILE})")
        run.outcome.problems.append(run.outcome.failures[-1])
    if nemesis is not None and nemesis.errors:
        run.outcome.problems += [f"nemesis: {e}" for e in nemesis.errors]
    _close_traffic(run, traffic)
    _finish_halting(run.cluster, run.outcome, run.log)
    _quiesce(run)
    reads = _final_reads(run, partitions)
    _replica_logs(run, reads)


def _make_nemesis(run: RunContext) -> Nemesis | None:
    """The run's nemesis, or None for a run without faults."""
    spec = run.spec
    if not spec.faults and spec.nemesis.schedule != "scripted":
        return None
    try:
        schedule = make_schedule(spec.nemesis.schedule, spec.faults, spec.nemesis.interval,
                                 list(spec.nemesis.script) or None)
        return Nemesis(run.cluster, schedule, run.recorder, seed=spec.seed, topic=run.topic,
                       timeout=spec.timeouts.heal, group=spec.consumer.group, netem=dict(spec.nemesis.netem))
    except ClusterConfigError as e:
        raise BadInput(str(e)) from None


def _main_and_heal(run: RunContext, traffic: Traffic, nemesis: Nemesis | None) -> list[BaseException]:
    """The main phase, traffic and nemesis side by side for the time limit, then heal (always,
    HealGuard); the nemesis's crashes, if it had any."""
    spec, outcome = run.spec, run.outcome
    heal = nemesis.heal if nemesis is not None else (lambda: run.cluster.heal(spec.timeouts.heal))
    crashes: list[BaseException] = []
    with HealGuard(heal) as guard:
        run.progress.phase("main")
        main_started = time.monotonic()
        outcome.timings["run to first op"] = main_started - run.started
        worker = None
        if nemesis is not None:
            worker = threading.Thread(target=run_nemesis, args=(nemesis, spec.time_limit, run.log, crashes),
                                      name="nemesis", daemon=True)
            worker.start()
        run.progress.start(lambda: _status(traffic, nemesis, main_started, spec.time_limit))
        try:
            traffic.run(spec.time_limit)
        finally:
            run.progress.stop()
            if nemesis is not None and worker is not None:
                nemesis.stop()
                worker.join(spec.timeouts.heal * 4 + MAIN_GRACE_S)
            outcome.last_op_at = time.monotonic()
            run.progress.phase("heal")
    run.log.info("healed: %s", guard.result)
    return crashes


def _recover(run: RunContext, traffic: Traffic) -> None:
    """Traffic goes on after the final heal until every partition took a write and the consumers
    caught up, or one partition can never recover, or the quiesce timeout."""
    spec, topic = run.spec, run.spec.topic
    run.progress.phase("recover")
    began = time.monotonic()
    recovered, hopeless = traffic.recover(
        spec.timeouts.quiesce,
        lambda pending: run.cluster.recovery.unrecoverable(topic.name, pending, topic.min_insync_replicas,
                                                           topic.unclean_leader_election))
    run.log.info("recovery after the final heal: %s in %.1f s%s", "done" if recovered else "not done",
                 time.monotonic() - began, f" ({hopeless})" if hopeless else "")
    if hopeless:
        run.outcome.problems.append(f"recovery: ended at once: {hopeless} (results.json's liveness section "
                                    "says which partitions did not recover)")
    elif not recovered:
        run.outcome.problems.append(f"recovery: within {spec.timeouts.quiesce:g} s of the final heal, not every "
                                    "partition acknowledged a write or the consumers did not catch up "
                                    "(results.json's liveness section says which)")


def _close_traffic(run: RunContext, traffic: Traffic) -> None:
    """The clients closed; the client logs kept for a client in trouble named in the run's log."""
    traffic.close(run.spec.timeouts.final_read)
    consumer = traffic.consumer
    if consumer is None:
        return
    if consumer.client_log_lines():
        run.log.info("client log lines (kept in rings, written only for a client in trouble): %s",
                     consumer.client_log_lines())
    for path, whys in consumer.client_logs():
        run.log.warning("client log %s: %s", path.relative_to(run.run_dir), "; ".join(whys))


def _quiesce(run: RunContext) -> None:
    """Until every partition has a leader and a full ISR; a timeout is a problem, not the end: the
    reads go on, and an incomplete one makes the verdict unknown."""
    run.progress.phase("quiesce")
    try:
        run.cluster.recovery.wait_for_full_isr(run.topic, run.spec.timeouts.quiesce)
    except HostError as e:
        run.outcome.problems.append(f"quiesce: {e}")
        run.log.warning("quiesce: %s", e)


def _final_reads(run: RunContext, partitions: list[int]) -> int:
    """Every partition read from the start by a fresh consumer into final.jsonl (those no broker
    can lead again left out, with the reason); the lines written."""
    run.progress.phase("final reads")
    began = time.monotonic()
    offline = run.cluster.recovery.offline(run.topic, partitions, run.spec.topic.unclean_leader_election)
    for why in offline.values():
        run.log.warning("final reads: not asked for: %s", why)
    reads = write_final_reads(run.spec, run.cluster.bootstrap, partitions, run.run_dir / FINAL_FILE, offline)
    run.log.info("final reads: %d lines in %.1f s", reads, time.monotonic() - began)
    return reads


def _replica_logs(run: RunContext, reads: int) -> None:
    """The brokers stopped cleanly, side by side, then every replica's on-disk log appended to
    final.jsonl."""
    cluster, timeouts = run.cluster, run.spec.timeouts
    with ThreadPoolExecutor(max_workers=len(cluster.broker_nodes) or 1) as pool:  # side by side: each takes seconds
        for problem in pool.map(lambda node: _stop_broker(cluster, node, timeouts.teardown, run.log),
                                cluster.broker_nodes):
            if problem:
                run.outcome.problems.append(problem)
    began = time.monotonic()
    lines, problems = cluster.replica_log_lines(timeouts.final_read)
    run.log.info("replica logs read in %.1f s", time.monotonic() - began)
    run.outcome.problems += [f"replica dump of {p}" for p in problems]
    add_final_lines(run.run_dir / FINAL_FILE, lines)
    run.log.info("final.jsonl: %d final-read lines, %d replica lines", reads, len(lines))


def _finish_halting(cluster: Cluster, outcome: RunOutcome, log: logging.Logger) -> None:
    """A broker that logged it is exiting but still runs (0.10.2 hangs in its own shutdown hook,
    its ZooKeeper session alive, so no partition it leads moves) gets the exit it asked for:
    SIGKILL. Recovery and the final reads then meet the cluster Kafka meant to leave."""
    for node in cluster.broker_nodes:
        halted = [m for m in cluster.fatal_markers(node) if m.halts]
        if halted and cluster.node_state(node) != "down":
            try:
                cluster.kill(node)
            except HostError as e:
                outcome.problems.append(f"{node} was halting ({halted[-1].line}) and could not be killed: {e}")
                continue
            outcome.problems.append(f"{node} was halting ({halted[-1].line}): killed, as its own exit would have")
            log.warning("%s was halting and still running: killed (%s)", node, halted[-1].line)


def _stop_broker(cluster: Cluster, node: str, timeout: float, log: logging.Logger) -> str | None:
    """A clean stop (the on-disk logs and checkpoints then are the broker's own last word), or
    what went wrong. A broker that is halting itself gets no clean stop: 0.10.2's never ends
    (its exit waits for itself)."""
    began = time.monotonic()
    halting = any(m.halts for m in cluster.fatal_markers(node))
    try:
        cluster.stop(node, HALTING_STOP_S if halting else timeout)
    except HostError as e:
        return f"stopping {node}: {e}"
    finally:
        log.info("stopped %s in %.1f s", node, time.monotonic() - began)
    return None


def _status(traffic: Traffic, nemesis: Any, since: float, limit: float) -> Status:
    ok, fail, info, rate = traffic.counts()
    faults = tuple(str(f.spec) for f in nemesis.active) if nemesis is not None else ()
    return Status("main", time.monotonic() - since, limit, ok, fail, info, rate, faults)


def _teardown(cluster: Cluster, run_dir: Path, progress: Progress, log: logging.Logger,
              outcome: RunOutcome | None) -> None:
    progress.phase("teardown")
    cluster.collect_logs(run_dir / NODES_DIR)
    try:
        cluster.down()
    except HostError as e:
        log.error("teardown: %s", e)
        if outcome is not None:
            outcome.problems.append(f"teardown: {e}")


def _report(run_dir: Path, log: logging.Logger, outcome: RunOutcome) -> Path | None:
    try:
        from fencepost.harness.report import write_report
    except ImportError:
        return None
    try:
        return write_report(run_dir)
    except Exception as e:  # the verdict stands without its report; say why there is none
        log.exception("report")
        outcome.problems.append(f"report: {type(e).__name__}: {e}")
        return None
