"""The test spec of a run: from a TOML file (`fencepost run --config FILE.toml`) and
command-line flags (flags win), validated into one frozen `TestSpec`, written to
`test.json`.

Every bad value is a `BadInput` naming the key (`nemesis.interval`), the value and
what is allowed, so the CLI exits 254 before anything starts. Sections and their
keys are the dataclasses below; `docs/RUN.md` lists them with their defaults.
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from fencepost.clusters import BACKENDS, TRUNCATIONS, default_truncation, is_kafka, netns_unavailable
from fencepost.clusters import FLUSH_MODES as FLUSHES
from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.names import RESERVED_NAMES
from fencepost.nemesis.spec import LAZY_FAULTS
from fencepost.workloads.client_log import DEFAULT_DEBUG, DEFAULT_LINES, check_debug

SCHEDULES = ("fixed", "random", "scripted")
CONSUMER_MODES = ("assign", "subscribe", "mixed")
PRODUCER_CLIENTS = ("shared", "per-process")
PARTITION_CHOICES = ("round-robin", "random", "key")
CHECKER_KEYS = ("invalid", "linearizability", "linear_method", "search_budget")
MAX_SECONDS = 366 * 24 * 3600.0  # a year: beyond it a wait overflows the clock's timeout (threading.TIMEOUT_MAX)
MAX_RATE = 1_000_000.0
MAX_NODES = 250  # a /24 test subnet holds 253 hosts: brokers, controllers and the bridge
MAX_PROCESSES = 1000
MAX_PARTITIONS = 10_000
MAX_NAME = 100  # a test's or campaign's name: characters, and bytes in UTF-8 (a folder name holds 255)
MAX_NAME_BYTES = 200
TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")  # Kafka's rule for topic names
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class TopicSettings:
    name: str = "fp"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False  # the topic's unclean.leader.election.enable

    def configs(self) -> dict[str, str]:
        """Topic configs beyond what every system sets (min.insync.replicas goes with the system)."""
        return {"unclean.leader.election.enable": "true"} if self.unclean_leader_election else {}


@dataclass(frozen=True)
class NemesisSettings:
    faults: str = "kill,pause,partition"  # "" or "none": no faults
    schedule: str = "random"
    interval: float = 10.0
    script: tuple[Mapping[str, Any], ...] = ()
    netem: Mapping[str, Any] = field(default_factory=dict)  # the netem fault's settings (docs/NEMESIS.md)


@dataclass(frozen=True)
class ProducerSettings:
    idempotent: bool = False
    retries: int = 0
    max_in_flight: int = 1
    linger_ms: int = 0
    batch_messages: int = 0  # 0: librdkafka's default; n: at most n records in one batch (batch.num.messages)
    message_timeout_ms: int = 10_000
    request_timeout_ms: int = 5_000
    partition_choice: str = "round-robin"


@dataclass(frozen=True)
class ConsumerSettings:
    processes: int = 1  # 0: no consumer workload
    mode: str = "assign"
    group: str = "fencepost"  # the consumer group of subscribe mode (and the group-coordinator target's)
    subscribe_p: float = 0.5  # mixed mode: the chance a process opening its consumer subscribes (else assigns)
    commit_interval: float = 1.0  # a subscribed member commits what it read at most this often, seconds


# A producer client per process costs nothing up to this concurrency and most of the throughput
# beyond (bench/workload_bench.py, docs/WORKLOADS.md): the default below, one shared client above.
PER_PROCESS_UP_TO = 10


@dataclass(frozen=True)
class ClientSettings:
    producer: str = ""  # "": per-process up to PER_PROCESS_UP_TO processes, else shared; or either named
    crash_interval: float = 0.0  # mean seconds between client crashes (Jepsen's --crash-clients); 0: none
    debug: str = DEFAULT_DEBUG  # librdkafka debug contexts kept per consumer (workloads/client_log.py); "": none
    debug_lines: int = DEFAULT_LINES  # lines of each consumer's log ring, written to clients/ when it is in trouble


@dataclass(frozen=True)
class PhaseTimeouts:
    """Seconds each phase may take before the run gives up on it (heal always runs)."""
    setup: float = 120.0
    heal: float = 60.0
    quiesce: float = 60.0
    final_read: float = 60.0
    teardown: float = 60.0


@dataclass(frozen=True)
class TestSpec:
    name: str = "fencepost"
    system: str = "own"
    backend: str = ""  # "": netns as root on Linux, else process
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    system_options: Mapping[str, Any] = field(default_factory=dict)  # the system's own settings (docs/KAFKA.md)
    nodes: int = 3
    truncation: str = ""  # "": kip320 on the own system, the release's own protocol (release) on kafka
    flush: str = ""  # "": os, or lazy when the nemesis includes power-cut or a durability scenario
    time_limit: float = 60.0
    rate: float = 500.0
    concurrency: int = 10
    seed: int = 0
    results: str = "results"
    topic: TopicSettings = TopicSettings()
    nemesis: NemesisSettings = NemesisSettings()
    producer: ProducerSettings = ProducerSettings()
    consumer: ConsumerSettings = ConsumerSettings()
    clients: ClientSettings = ClientSettings()
    timeouts: PhaseTimeouts = PhaseTimeouts()
    checker: Mapping[str, Any] = field(default_factory=dict)  # test.json's checker section, as is
    notes: tuple[str, ...] = ()  # what the defaults decided that a person should know

    @property
    def faults(self) -> str:
        text = self.nemesis.faults.strip()
        return "" if text in ("", "none") else text

    def to_json(self) -> dict[str, Any]:
        """What test.json holds (docs/FORMATS.md, the run directory): the spec, plus the checker's inputs."""
        data = asdict(self)
        data["nemesis"]["script"] = [dict(step) for step in self.nemesis.script]
        data["nemesis"]["netem"] = dict(self.nemesis.netem)
        return data


SECTIONS = {"topic": TopicSettings, "nemesis": NemesisSettings, "producer": ProducerSettings,
            "consumer": ConsumerSettings, "clients": ClientSettings, "timeouts": PhaseTimeouts}


def load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise BadInput(f"--config {path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"--config {path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"--config {path}: not valid TOML: not UTF-8 text ({e})") from None
    except OSError as e:
        raise BadInput(f"--config {path}: cannot read it: {e}") from None


def build_spec(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> TestSpec:
    """The spec from a TOML table and flag overrides (dotted keys, e.g. "nemesis.faults"); validated."""
    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items()}
    for key, value in overrides.items():
        if value is None:
            continue
        section, _, name = key.rpartition(".")
        (data.setdefault(section, {}) if section else data)[name] = value
    top = {f.name: f for f in fields(TestSpec)}
    _unknown(data, top, "")
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name in SECTIONS:
            if not isinstance(value, dict):
                raise BadInput(f"[{name}] must be a table of settings, not {value!r}")
            values[name] = _section(SECTIONS[name], value, name)
        elif name in ("backend_options", "system_options", "checker"):
            if not isinstance(value, dict):
                raise BadInput(f"{name} must be a table, not {value!r}")
            values[name] = dict(value)
        elif name == "notes":
            raise BadInput("notes is written by fencepost, not a setting")
        else:
            values[name] = _typed(name, value, top[name].type, name)
    faults_given = "faults" in data.get("nemesis", {})
    return _checked(_defaults_filled(TestSpec(**values), faults_given))


def _unknown(data: Mapping[str, Any], known: Mapping[str, Any], where: str) -> None:
    extra = sorted(set(data) - set(known))
    if extra:
        of = f" of [{where.rstrip('.')}]" if where else ""
        raise BadInput(f"unknown setting {where}{extra[0]}: the settings{of} "
                       f"are {', '.join(known)}")


def _section(cls: type, data: Mapping[str, Any], name: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    _unknown(data, known, f"{name}.")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if cls is NemesisSettings and key == "script":
            if not isinstance(value, list) or not all(isinstance(step, dict) for step in value):
                raise BadInput("nemesis.script must be a list of tables ([[nemesis.script]] with at and action)")
            values[key] = tuple(dict(step) for step in value)
        elif cls is NemesisSettings and key == "netem":
            if not isinstance(value, dict):
                raise BadInput("nemesis.netem must be a table of settings ([nemesis.netem] with delay_ms, ...)")
            values[key] = dict(value)
        else:
            values[key] = _typed(f"{name}.{key}", value, known[key].type, key)
    return cls(**values)


def _typed(where: str, value: Any, annotation: Any, name: str) -> Any:
    kind = str(annotation)
    if kind == "bool":
        if not isinstance(value, bool):
            raise BadInput(f"{where} = {value!r}: give true or false")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadInput(f"{where} = {value!r}: give a whole number")
        if not INT64_MIN <= value <= INT64_MAX:
            raise BadInput(f"{where} = {value}: give a whole number that fits in 64 bits (test.json holds it)")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadInput(f"{where} = {value!r}: give a number")
        if not math.isfinite(value):
            raise BadInput(f"{where} = {value!r}: give a finite number")
        return float(value)
    if kind == "str":
        if not isinstance(value, str):
            raise BadInput(f"{where} = {value!r}: give a string")
        if "\x00" in value:
            raise BadInput(f"{where} = {value!r}: a string without NUL characters")
        return value
    return value


def _defaults_filled(spec: TestSpec, faults_given: bool) -> TestSpec:
    notes = list(spec.notes)
    backend = spec.backend
    if not backend:
        why_not_netns = netns_unavailable()
        backend = "process" if why_not_netns else "netns"
        if backend == "process":
            notes.append(f"the process backend, which cannot partition the network, so the nemesis is "
                         f"{'kill and pause only' if not faults_given else 'refused if it partitions'} "
                         f"({why_not_netns}; for netns run scripts/provision as root)")
    if backend == "process" and not faults_given:  # the default faults partition, which it cannot
        spec = replace(spec, nemesis=replace(spec.nemesis, faults="kill,pause"))
    flush = spec.flush or ("lazy" if any(f in spec.faults for f in LAZY_FAULTS) else "os")
    if not spec.clients.producer:
        chosen = "per-process" if spec.concurrency <= PER_PROCESS_UP_TO else "shared"
        spec = replace(spec, clients=replace(spec.clients, producer=chosen))
    truncation = spec.truncation or default_truncation(spec.system)
    return replace(spec, backend=backend, flush=flush, truncation=truncation, notes=tuple(notes))




def _need(ok: bool, message: str) -> None:
    if not ok:
        raise BadInput(message)


def _checked(spec: TestSpec) -> TestSpec:
    """The spec, every setting within what the run (and librdkafka) accepts; BadInput names the
    first that is not, and what to give."""
    _check_run(spec)
    _check_topic(spec.topic, spec.nodes)
    _check_schedule(spec.nemesis)
    _check_producer(spec.producer)
    _check_consumer(spec.consumer)
    _check_clients(spec.clients)
    for phase in fields(PhaseTimeouts):
        seconds = getattr(spec.timeouts, phase.name)
        _need(0 < seconds <= MAX_SECONDS,
              f"timeouts.{phase.name} = {seconds:g}: give seconds > 0, at most {MAX_SECONDS:g}")
    _check_nemesis(spec)
    _check_system(spec)
    _check_checker(spec)
    for where, value in _numbers(spec.to_json(), ""):
        _need(INT64_MIN <= value <= INT64_MAX,
              f"{where} = {value}: give a whole number that fits in 64 bits (test.json holds it)")
    return spec


def _check_run(spec: TestSpec) -> None:
    problem = name_problem(spec.name)
    _need(problem is None, f"name = {_shown(spec.name)}: {problem} (a test's runs go in RESULTS/NAME/)")
    _need(spec.backend in BACKENDS, f"backend = {spec.backend!r}: choose one of {', '.join(BACKENDS)}")
    _need(spec.truncation in TRUNCATIONS, f"truncation = {spec.truncation!r}: choose one of {', '.join(TRUNCATIONS)}")
    _need(spec.flush in FLUSHES, f"flush = {spec.flush!r}: choose one of {', '.join(FLUSHES)}")
    _need(1 <= spec.nodes <= MAX_NODES, f"nodes = {spec.nodes}: give 1..{MAX_NODES} brokers")
    _need(0 < spec.time_limit <= MAX_SECONDS,
          f"time_limit = {spec.time_limit:g}: give seconds > 0, at most {MAX_SECONDS:g}")
    _need(1 / MAX_SECONDS <= spec.rate <= MAX_RATE,
          f"rate = {spec.rate:g}: give operations per second > 0 (from {1 / MAX_SECONDS:.2g} to {MAX_RATE:g})")
    _need(1 <= spec.concurrency <= MAX_PROCESSES,
          f"concurrency = {spec.concurrency}: give 1..{MAX_PROCESSES} producer processes")


def _check_topic(t: TopicSettings, nodes: int) -> None:
    _need(bool(TOPIC_NAME.fullmatch(t.name)) and t.name not in (".", ".."),
          f"topic.name = {t.name!r}: a Kafka topic name is 1..249 of letters, digits, '.', '_' and '-'")
    _need(1 <= t.partitions <= MAX_PARTITIONS, f"topic.partitions = {t.partitions}: give 1..{MAX_PARTITIONS}")
    _need(1 <= t.replication_factor <= nodes,
          f"topic.replication_factor = {t.replication_factor}: give 1..{nodes} (the number of brokers)")
    _need(1 <= t.min_insync_replicas <= t.replication_factor,
          f"topic.min_insync_replicas = {t.min_insync_replicas}: "
          f"give 1..{t.replication_factor} (the replication factor)")


def _check_schedule(n: NemesisSettings) -> None:
    _need(n.schedule in SCHEDULES, f"nemesis.schedule = {n.schedule!r}: choose one of {', '.join(SCHEDULES)}")
    _need(0 < n.interval <= MAX_SECONDS,
          f"nemesis.interval = {n.interval:g}: give seconds > 0, at most {MAX_SECONDS:g}")
    _need(n.schedule != "scripted" or bool(n.script),
          "nemesis.schedule = \"scripted\" needs [[nemesis.script]] entries (at, action)")


def _check_producer(p: ProducerSettings) -> None:
    # the ranges librdkafka accepts: outside them the producer refuses to start, mid-run
    _need(0 <= p.retries <= INT32_MAX, f"producer.retries = {p.retries}: give 0..{INT32_MAX}")
    _need(1 <= p.max_in_flight <= 1_000_000, f"producer.max_in_flight = {p.max_in_flight}: give 1..1000000")
    _need(0 <= p.linger_ms <= 900_000, f"producer.linger_ms = {p.linger_ms}: give 0..900000")
    _need(0 <= p.batch_messages <= 1_000_000,
          f"producer.batch_messages = {p.batch_messages}: give 0 (librdkafka's default) or 1..1000000")
    _need(1 <= p.message_timeout_ms <= INT32_MAX,
          f"producer.message_timeout_ms = {p.message_timeout_ms}: give milliseconds 1..{INT32_MAX}")
    _need(1 <= p.request_timeout_ms <= 900_000,
          f"producer.request_timeout_ms = {p.request_timeout_ms}: give milliseconds 1..900000")
    _need(p.partition_choice in PARTITION_CHOICES,
          f"producer.partition_choice = {p.partition_choice!r}: choose one of {', '.join(PARTITION_CHOICES)}")
    _need(not p.idempotent or p.retries >= 1,
          "producer.idempotent = true needs producer.retries >= 1 (librdkafka refuses idempotence without retries)")


def _check_consumer(c: ConsumerSettings) -> None:
    _need(0 <= c.processes <= MAX_PROCESSES, f"consumer.processes = {c.processes}: give 0..{MAX_PROCESSES}")
    _need(c.mode in CONSUMER_MODES, f"consumer.mode = {c.mode!r}: choose one of {', '.join(CONSUMER_MODES)}")
    _need(bool(c.group) and c.group.isprintable() and len(c.group) <= 249,
          f"consumer.group = {c.group!r}: give a group name of 1..249 printable characters")
    _need(0 <= c.subscribe_p <= 1, f"consumer.subscribe_p = {c.subscribe_p:g}: give a probability 0..1")
    _need(0 <= c.commit_interval <= MAX_SECONDS,
          f"consumer.commit_interval = {c.commit_interval:g}: give seconds >= 0 (0: after every poll)")


def _check_clients(k: ClientSettings) -> None:
    _need(k.producer in PRODUCER_CLIENTS,
          f"clients.producer = {k.producer!r}: choose one of {', '.join(PRODUCER_CLIENTS)}")
    _need(0 <= k.crash_interval <= MAX_SECONDS,
          f"clients.crash_interval = {k.crash_interval:g}: give mean seconds between client crashes, 0 for none")
    _need(check_debug(k.debug) is None, f"clients.debug = {k.debug!r}: {check_debug(k.debug)}")
    _need(1 <= k.debug_lines <= 10_000_000, f"clients.debug_lines = {k.debug_lines}: give 1..10000000 lines per client")


NAME_RULE = (f"printable, at most {MAX_NAME} characters and {MAX_NAME_BYTES} bytes in UTF-8, no '/', not starting "
             f"with '.', and none of {', '.join(RESERVED_NAMES)}")


def name_problem(name: str) -> str | None:
    """What is wrong with `name` as the folder of a test's (or a campaign's) runs, and what to
    do, or None. Reserved names are compared ignoring case (a case-insensitive disk)."""
    if not name or not name.isprintable() or "/" in name or name.startswith("."):
        return f"a name is {NAME_RULE}"
    if len(name) > MAX_NAME or len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return (f"{len(name)} characters, {len(name.encode('utf-8'))} bytes: give at most {MAX_NAME} characters "
                f"and {MAX_NAME_BYTES} bytes in UTF-8 (it names a folder, and a folder name holds 255 bytes)")
    if name.casefold() in {reserved.casefold() for reserved in RESERVED_NAMES}:
        return (f"reserved: the top of a results folder holds {', '.join(RESERVED_NAMES)} of its own; "
                "choose another name")
    return None


def _shown(value: str) -> str:
    """A name as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}...' ({len(value)} characters)"


def _numbers(data: Any, where: str) -> Any:
    """(dotted key, int) for every whole number in nested tables and lists."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from _numbers(value, f"{where}.{key}" if where else str(key))
    elif isinstance(data, (list, tuple)):
        for n, value in enumerate(data):
            yield from _numbers(value, f"{where}[{n}]")
    elif isinstance(data, int) and not isinstance(data, bool):
        yield where, data


# What the cluster, the nemesis and the checker would refuse only once a cluster is up: asked here,
# so that a bad value exits 254 before anything starts.

def _check_nemesis(spec: TestSpec) -> None:
    from fencepost.clusters import ClusterConfigError
    from fencepost.nemesis import make_schedule
    from fencepost.nemesis.netem import NetemOptions
    n = spec.nemesis
    try:
        NetemOptions.from_mapping(n.netem)
    except ClusterConfigError as e:
        raise BadInput(f"nemesis.netem: {e}") from None
    if not spec.faults and n.schedule != "scripted":
        return
    try:
        schedule = make_schedule(n.schedule, spec.faults, n.interval, list(n.script) or None)
    except ClusterConfigError as e:
        key = "nemesis.script" if n.schedule == "scripted" else "nemesis.faults"
        raise BadInput(f"{key}: {e}") from None
    cutting = sorted({str(fault) for fault in schedule.faults if fault.kind.cuts_network})
    if cutting and spec.backend == "process":
        why = netns_unavailable()
        raise BadInput(f"nemesis.faults: {', '.join(cutting)} cut the network, which the process backend cannot "
                       f"(its nodes all share 127.0.0.1){f'; netns is not available here: {why}' if why else ''}; "
                       "use --backend netns as root (scripts/provision installs ip and iptables) or --backend "
                       "docker, or choose faults without partitions (kill, pause)")
    if any(fault.kind.shapes_traffic for fault in schedule.faults):
        from fencepost.clusters import kernel_shaping_unavailable
        why = kernel_shaping_unavailable(spec.backend)
        if why:
            raise BadInput(f"nemesis.faults: netem on the {spec.backend} backend: {why}; leave netem out here")


def cluster_options(spec: TestSpec) -> dict[str, Any]:
    """The system options a run's cluster gets: the spec's `system_options` and what the run
    settings say of the system (truncation, flush, min.insync.replicas)."""
    return {"truncation": spec.truncation, "flush": spec.flush,
            "min_insync_replicas": spec.topic.min_insync_replicas, **spec.system_options}


def _check_system(spec: TestSpec) -> None:
    from fencepost.clusters import ClusterConfigError, check_backend_options, check_system, check_system_options
    if spec.system != "own" and not is_kafka(spec.system):
        raise BadInput(f"system = {spec.system!r}: choose own, or kafka:VERSION (e.g. kafka:3.9.1, kafka:0.10.2.2)")
    try:
        check_system(spec.system)
    except ClusterConfigError as e:
        raise BadInput(f"system = {spec.system!r}: {e}") from None
    try:
        check_system_options(spec.system, cluster_options(spec))
    except ClusterConfigError as e:
        raise BadInput(f"system_options: {e}") from None
    try:
        check_backend_options(spec.backend, spec.backend_options, spec.nodes)
    except ClusterConfigError as e:
        raise BadInput(f"backend_options: {e}") from None


def _check_checker(spec: TestSpec) -> None:
    from fencepost.harness.rundir.recorded_test import checker_section
    unknown = sorted(set(spec.checker) - set(CHECKER_KEYS))
    if unknown:
        raise BadInput(f"unknown setting checker.{unknown[0]}: the settings of [checker] are {', '.join(CHECKER_KEYS)}")
    checker_section({"checker": dict(spec.checker)}, "[checker]")
