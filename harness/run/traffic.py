"""The run's traffic: the spec's producer and consumer workloads (workloads/) on one
recorder, driven by the scheduler (harness/run/scheduler.py) — and the final reads.

`start_traffic(spec, bootstrap, recorder, partitions) -> Traffic`: `run(limit)` in
the caller's thread, `stop()` from any thread, `counts()` for the progress line,
`recover(timeout)` after the final heal (the traffic goes on, client crashes off, until
every partition has acknowledged a write since and the consumers have read what was
acknowledged before it, or the timeout), `close(timeout)` when the traffic is over
(sends without a delivery report by then are recorded `info`). `write_final_reads` adds the final reads to
final.jsonl whole or not at all (harness/rundir/final_writer.py).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

from fencepost.harness.errors import BadInput
from fencepost.harness.run.scheduler import Lane, Scheduler, plan_processes
from fencepost.harness.run.spec import TestSpec
from fencepost.harness.rundir.final_writer import add_final_lines, encode_lines
from fencepost.harness.rundir.history import Recorder
from fencepost.workloads.consumer import ConsumerOptions, ConsumerWorkload
from fencepost.workloads.final_read import final_read_lines
from fencepost.workloads.producer import ProducerOptions, ProducerWorkload
from fencepost.workloads.recording import WorkloadConfigError

QUIET_CLIENTS = {"log_level": 0}  # librdkafka's own log lines would interleave with the progress line


RECOVER_SLICE_S = 0.2  # the recovery phase looks at its goal this often


class Traffic:
    def __init__(self, scheduler: Scheduler, producer: ProducerWorkload, consumer: ConsumerWorkload | None) -> None:
        self.scheduler = scheduler
        self.producer = producer
        self.consumer = consumer

    def run(self, time_limit: float) -> None:
        self.scheduler.run(time_limit)

    def recover(self, timeout: float,
                hopeless: Callable[[list[int]], str | None] | None = None) -> tuple[bool, str | None]:
        """After the final heal: traffic as in the main phase (no client crashes) until every
        partition acknowledged a write since now and the consumers read everything acknowledged
        before now. (whether that happened within `timeout` seconds, why the wait ended early):
        `hopeless(partitions not yet acknowledged)` says why they never will (the history and
        the liveness verdict tell the rest)."""
        healed = time.monotonic()
        targets = dict(self.producer.highest_acked)
        partitions = self.producer.partitions
        self.scheduler.stop_crashes()
        deadline = healed + timeout
        while (left := deadline - time.monotonic()) > 0 and not self.scheduler.stopped:
            self.scheduler.run(min(RECOVER_SLICE_S, left))
            pending = [p for p in partitions if self.producer.acked_at.get(p, 0.0) <= healed]
            if not pending and (self.consumer is None or self.consumer.caught_up(targets)):
                return True, None
            why = hopeless(pending) if hopeless is not None and pending else None
            if why:
                return False, why
        return False, None

    def stop(self) -> None:
        self.scheduler.stop()

    def counts(self) -> tuple[int, int, int, float]:
        s = self.scheduler.snapshot()
        return s.ok, s.fail, s.info, s.ops_per_s

    def close(self, timeout: float) -> None:
        self.scheduler.close(timeout)


def start_traffic(spec: TestSpec, bootstrap: str, recorder: Recorder, partitions: Sequence[int],
                  client_logs: Path | None = None) -> Traffic:
    """`client_logs`: the folder of the consumers' client logs (workloads/client_log.py), or None."""
    plan = plan_processes(spec.concurrency, spec.consumer.processes)
    p = spec.producer
    try:
        producer = ProducerWorkload(
            bootstrap, recorder, partitions, plan.producers,
            ProducerOptions(topic=spec.topic.name, idempotent=p.idempotent, retries=p.retries,
                            max_in_flight=p.max_in_flight, linger_ms=p.linger_ms, batch_messages=p.batch_messages,
                            message_timeout_ms=p.message_timeout_ms, request_timeout_ms=p.request_timeout_ms,
                            partition_choice=p.partition_choice, client=spec.clients.producer,
                            librdkafka=QUIET_CLIENTS),
            seed=spec.seed)
        lanes = [Lane(producer, spec.rate)]
        consumer = None
        if spec.consumer.processes:
            c = spec.consumer
            options = ConsumerOptions(topic=spec.topic.name, mode=c.mode, group=c.group, subscribe_p=c.subscribe_p,
                                      commit_interval_s=c.commit_interval, librdkafka=QUIET_CLIENTS,
                                      debug=spec.clients.debug, debug_lines=spec.clients.debug_lines)
            consumer = ConsumerWorkload(bootstrap, recorder, partitions, plan.consumers, options, seed=spec.seed,
                                        client_logs=client_logs, acked=lambda: producer.highest_acked)
            lanes.append(Lane(consumer, consumer.poll_rate))
    except WorkloadConfigError as e:
        raise BadInput(str(e)) from None
    crash_interval = spec.clients.crash_interval or None
    return Traffic(Scheduler(lanes, seed=spec.seed, crash_interval=crash_interval), producer, consumer)


def write_final_reads(spec: TestSpec, bootstrap: str, partitions: Sequence[int], path: Path,
                      unreadable: dict[int, str] | None = None) -> int:
    """Read every partition (but the `unreadable` ones: workloads/final_read.py) and add the
    lines to final.jsonl at `path`, atomically; how many."""
    lines = final_read_lines(bootstrap, spec.topic.name, partitions, spec.timeouts.final_read, QUIET_CLIENTS,
                             unreadable)
    return add_final_lines(path, encode_lines(lines))
