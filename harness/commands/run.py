"""`fencepost run`: the main job — provision a cluster, drive acks=all traffic, inject
faults, heal, read everything back, check, report (docs/RUN.md). With no arguments:
the own system, 3 brokers + controller, netns when root (otherwise the process backend
with kill and pause only), nemesis kill,pause,partition, 60 s at 500 ops/s.
Exit codes (docs/FORMATS.md): 0 valid, 1 invalid, 2 unknown, 254 bad spec, 255 crashed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fencepost.harness.errors import EXIT_CRASH

if TYPE_CHECKING:
    from fencepost.harness.run.runner import RunOutcome

NAME = "run"
HELP = "run a chaos test end to end: cluster, traffic, faults, heal, final reads, check, report"
EXAMPLES = (
    ("fencepost run", "the main job: own brokers, kill,pause,partition, 60 s at 500 ops/s"),
    ("fencepost run --backend process --time-limit 10", "a short run without root (kill and pause only)"),
    ("fencepost run --truncation hw --nemesis leader-bounce --nemesis-schedule fixed --nemesis-interval 4 "
     "--time-limit 30", "KIP-101's lost writes, reproduced"),
    ("fencepost run --system kafka:3.9.1 --nemesis kill,pause,partition", "stock Apache Kafka"),
    ("fencepost run --config my-test.toml --seed 7", "a test spec from a file (docs/RUN.md), one flag overriding it"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fencepost.harness.run.spec import BACKENDS, FLUSHES, SCHEDULES, TRUNCATIONS

    parser.add_argument("--config", type=Path, metavar="FILE.toml",
                        help="a test spec (docs/RUN.md lists its settings); flags override it")
    parser.add_argument("--name", help="the test's name: results go to RESULTS/NAME/ (default fencepost)")
    parser.add_argument("--system", help="what runs on the hosts (default own)")
    parser.add_argument("--kafka-home", metavar="DIR",
                        help="an unpacked Apache Kafka distribution for --system kafka (instead of Maven)")
    parser.add_argument("--system-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a system setting, repeatable (kafka: mode=kraft, controllers=3, "
                             "session_timeout_ms=3000, broker_config={...}; docs/KAFKA.md)")
    # "" is the spec's "let fencepost choose" (docs/RUN.md), as when the flag is left out.
    parser.add_argument("--backend", choices=(*BACKENDS, ""), metavar=_choices(BACKENDS),
                        help="where the nodes run (default: netns as root with ip and iptables, else process)")
    parser.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a backend setting, repeatable (e.g. subnet=10.77.3.0/24)")
    parser.add_argument("--nodes", type=int, help="brokers (default 3)")
    parser.add_argument("--truncation", choices=TRUNCATIONS,
                        help="follower truncation: the protocol under test (default: kip320 on the own system, "
                             "the release's own protocol, release, on stock Kafka)")
    parser.add_argument("--flush", choices=(*FLUSHES, ""), metavar=_choices(FLUSHES),
                        help="os (Kafka's default: the page cache), fsync (per message), or lazy: the nodes' data on "
                             "the lazy filesystem, so a power cut loses what was not fsynced (default os; lazy "
                             "with power-cut and the durability scenarios)")
    parser.add_argument("--nemesis", metavar="FAULTS",
                        help="faults, e.g. kill,pause,partition:majorities-ring, leader-bounce, zombie, "
                             "fast-leader-change, power-cut, kip101-divergence, last-replica-standing; none for none")
    parser.add_argument("--nemesis-schedule", choices=SCHEDULES,
                        help="when faults happen (default random; scripted: the script from --config)")
    parser.add_argument("--nemesis-interval", type=float, metavar="S", help="seconds between faults (default 10)")
    parser.add_argument("--time-limit", type=float, metavar="S", help="seconds of traffic (default 60)")
    parser.add_argument("--rate", type=float, metavar="OPS", help="operations per second (default 500)")
    parser.add_argument("--concurrency", type=int, metavar="N", help="producer processes (default 10)")
    parser.add_argument("--seed", type=int, help="seed of every random choice (default 0)")
    parser.add_argument("--results", help="the results folder (default results)")


def _choices(names: tuple[str, ...]) -> str:
    return "{" + ",".join(names) + "}"


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.commands.cluster import parse_backend_options
    from fencepost.harness.index.page import refresh_index
    from fencepost.harness.provenance import python_reader_notice
    from fencepost.harness.run.progress import Progress
    from fencepost.harness.run.runner import RunError, run_test
    from fencepost.harness.run.spec import build_spec, load_toml

    notice = python_reader_notice()
    if notice is not None:
        print(notice, file=sys.stderr)
    config = load_toml(args.config) if args.config else {}
    overrides = {"name": args.name, "system": args.system, "backend": args.backend, "nodes": args.nodes,
                 "truncation": args.truncation, "flush": args.flush, "nemesis.faults": args.nemesis,
                 "nemesis.schedule": args.nemesis_schedule, "nemesis.interval": args.nemesis_interval,
                 "time_limit": args.time_limit, "rate": args.rate, "concurrency": args.concurrency,
                 "seed": args.seed, "results": args.results}
    if args.backend_option:
        overrides["backend_options"] = {**config.get("backend_options", {}),
                                        **parse_backend_options(args.backend_option)}
    system_options = parse_backend_options(args.system_option, "--system-option")
    if args.kafka_home:
        system_options["kafka_home"] = args.kafka_home
    if system_options:
        overrides["system_options"] = {**config.get("system_options", {}), **system_options}
    spec = build_spec(config, overrides)
    for note in spec.notes:
        print(f"fencepost run: {note}", file=sys.stderr)
    try:
        outcome = run_test(spec, Progress())
    except RunError as e:
        print(f"fencepost run: {e}", file=sys.stderr)
        return EXIT_CRASH
    finally:
        refresh_index(Path(spec.results))
    for line in summary_lines(outcome, spec.system):
        print(line)
    return outcome.exit_code


OWN_SYSTEM = "own brokers (fencepost's Kafka-protocol implementation)"
KAFKA_MODES = {"zk": "ZooKeeper", "kraft": "KRaft"}


def system_tested(run_dir: Path, system: str) -> str:
    """The system a run tested, in words: the own brokers, or `Apache Kafka 3.9.1 (KRaft)` as the
    run's test.json recorded the release and its mode (a --kafka-home release reports its own
    version); the system asked for, without a mode, when the run stopped before recording them."""
    from fencepost.clusters import is_kafka
    from fencepost.harness.errors import BadInput
    from fencepost.harness.rundir.names import TEST_FILE
    from fencepost.harness.rundir.recorded_test import read_test

    if not is_kafka(system):
        return OWN_SYSTEM
    try:
        test = read_test(run_dir / TEST_FILE)
    except BadInput:  # unreadable or not an object: the system as asked for
        test = {}
    versions = test.get("versions")
    versions = versions if isinstance(versions, dict) else {}
    release = versions.get("kafka") or system.partition(":")[2] or "(an unpacked distribution)"
    mode = KAFKA_MODES.get(str(versions.get("mode")))
    return f"Apache Kafka {release}" + (f" ({mode})" if mode else "")


def summary_lines(outcome: RunOutcome, system: str) -> list[str]:
    """What `fencepost run` prints at its end: the verdict with the anomalies found, the system
    tested, liveness and premise findings, problems, the run directory, the report, timings."""
    from fencepost.harness.check.liveness import describe as describe_liveness
    from fencepost.harness.check.premise import describe as describe_premise
    from fencepost.harness.rundir.record import timings_text, verdict_word

    verdict = verdict_word(outcome.check.valid if outcome.check else None)
    counts = outcome.check.results.get("anomaly_counts", {}) if outcome.check else {}
    found = ", ".join(f"{name} {n}" for name, n in counts.items() if n)
    lines = [f"verdict: {verdict}" + (f" ({found})" if found else ""),
             f"system: {system_tested(outcome.run_dir, system)}"]
    if outcome.check is not None:
        lines += [f"  liveness: {line}"
                  for line in describe_liveness(outcome.check.results.get("liveness") or {}, outcome.run_dir)]
        lines += [f"  premise: {line}" for line in describe_premise(outcome.check.results.get("premise") or {})]
    lines += [f"  note: {problem}" for problem in outcome.problems]
    lines.append(f"run directory: {outcome.run_dir}")
    if outcome.report is not None:
        lines.append(f"report: {outcome.report}")
    timings = timings_text(outcome.timings)
    if timings:
        lines.append(f"timings: {timings}")
    return lines
