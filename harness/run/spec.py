"""The test spec of a run: from a TOML file (`fencepost run --config FILE.toml`) and
command-line flags (flags win), validated into one frozen `TestSpec`, written to
`test.json`.

Every bad value is a `BadInput` naming the key (`nemesis.interval`), the value and
what is allowed, so the CLI exits 254 before anything starts. Sections and their
keys are the dataclasses below; `docs/RUN.md` lists them with their defaults.
"""
from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from clusters.hosts import default_backend
from harness.errors import BadInput

BACKENDS = ("netns", "process", "docker", "ssh")
TRUNCATIONS = ("hw", "kip101", "kip279", "kip320")
FLUSHES = ("os", "fsync", "lazy")
SCHEDULES = ("fixed", "random", "scripted")
CONSUMER_MODES = ("assign", "subscribe")
PARTITION_CHOICES = ("round-robin", "random", "key")


@dataclass(frozen=True)
class TopicSettings:
    name: str = "fp"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2


@dataclass(frozen=True)
class NemesisSettings:
    faults: str = "kill,pause,partition"  # "" or "none": no faults
    schedule: str = "random"
    interval: float = 10.0
    script: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ProducerSettings:
    idempotent: bool = False
    retries: int = 0
    max_in_flight: int = 1
    linger_ms: int = 0
    message_timeout_ms: int = 10_000
    request_timeout_ms: int = 5_000
    partition_choice: str = "round-robin"


@dataclass(frozen=True)
class ConsumerSettings:
    processes: int = 1  # 0: no consumer workload
    mode: str = "assign"


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
    truncation: str = "kip320"
    flush: str = ""  # "": os, or lazy when the nemesis includes power-cut
    time_limit: float = 60.0
    rate: float = 500.0
    concurrency: int = 10
    seed: int = 0
    results: str = "results"
    topic: TopicSettings = TopicSettings()
    nemesis: NemesisSettings = NemesisSettings()
    producer: ProducerSettings = ProducerSettings()
    consumer: ConsumerSettings = ConsumerSettings()
    timeouts: PhaseTimeouts = PhaseTimeouts()
    checker: Mapping[str, Any] = field(default_factory=dict)  # test.json's checker section, as is
    notes: tuple[str, ...] = ()  # what the defaults decided that a person should know

    @property
    def faults(self) -> str:
        text = self.nemesis.faults.strip()
        return "" if text in ("", "none") else text

    def to_json(self) -> dict[str, Any]:
        """What test.json holds (DESIGN.md §3.1): the spec, plus the checker's inputs."""
        data = asdict(self)
        data["nemesis"]["script"] = [dict(step) for step in self.nemesis.script]
        return data


SECTIONS = {"topic": TopicSettings, "nemesis": NemesisSettings, "producer": ProducerSettings,
            "consumer": ConsumerSettings, "timeouts": PhaseTimeouts}


def load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise BadInput(f"--config {path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"--config {path}: not valid TOML: {e}") from None
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
        raise BadInput(f"unknown setting {where}{extra[0]}: the settings{' of [' + where.rstrip('.') + ']' if where else ''} "
                       f"are {', '.join(known)}")


def _section(cls: type, data: Mapping[str, Any], name: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    _unknown(data, known, f"{name}.")
    values = {}
    for key, value in data.items():
        if cls is NemesisSettings and key == "script":
            if not isinstance(value, list) or not all(isinstance(step, dict) for step in value):
                raise BadInput("nemesis.script must be a list of tables ([[nemesis.script]] with at and action)")
            values[key] = tuple(dict(step) for step in value)
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
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadInput(f"{where} = {value!r}: give a number")
        return float(value)
    if kind == "str":
        if not isinstance(value, str):
            raise BadInput(f"{where} = {value!r}: give a string")
        return value
    return value


def _defaults_filled(spec: TestSpec, faults_given: bool) -> TestSpec:
    notes = list(spec.notes)
    backend = spec.backend
    if not backend:
        backend = default_backend()
        if backend == "process" and not faults_given:
            spec = replace(spec, nemesis=replace(spec.nemesis, faults="kill,pause"))
            notes.append("not root: the process backend, so the nemesis is kill and pause only (no partitions)")
    flush = spec.flush or ("lazy" if "power-cut" in spec.faults else "os")
    return replace(spec, backend=backend, flush=flush, notes=tuple(notes))


def _checked(spec: TestSpec) -> TestSpec:
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise BadInput(message)
    need(bool(spec.name) and "/" not in spec.name and not spec.name.startswith("."),
         f"name = {spec.name!r}: a test name is a folder name under results/ (no '/', not starting with '.')")
    need(spec.backend in BACKENDS, f"backend = {spec.backend!r}: choose one of {', '.join(BACKENDS)}")
    need(spec.truncation in TRUNCATIONS, f"truncation = {spec.truncation!r}: choose one of {', '.join(TRUNCATIONS)}")
    need(spec.flush in FLUSHES, f"flush = {spec.flush!r}: choose one of {', '.join(FLUSHES)}")
    need(spec.nodes >= 1, f"nodes = {spec.nodes}: a cluster needs at least one broker")
    need(spec.time_limit > 0, f"time_limit = {spec.time_limit:g}: give seconds > 0")
    need(spec.rate > 0, f"rate = {spec.rate:g}: give operations per second > 0")
    need(spec.concurrency >= 1, f"concurrency = {spec.concurrency}: give at least 1 producer process")
    t = spec.topic
    need(t.partitions >= 1, f"topic.partitions = {t.partitions}: give at least 1")
    need(1 <= t.replication_factor <= spec.nodes,
         f"topic.replication_factor = {t.replication_factor}: give 1..{spec.nodes} (the number of brokers)")
    need(1 <= t.min_insync_replicas <= t.replication_factor,
         f"topic.min_insync_replicas = {t.min_insync_replicas}: give 1..{t.replication_factor} (the replication factor)")
    n = spec.nemesis
    need(n.schedule in SCHEDULES, f"nemesis.schedule = {n.schedule!r}: choose one of {', '.join(SCHEDULES)}")
    need(n.interval > 0, f"nemesis.interval = {n.interval:g}: give seconds > 0")
    need(n.schedule != "scripted" or bool(n.script),
         "nemesis.schedule = \"scripted\" needs [[nemesis.script]] entries (at, action)")
    p = spec.producer
    need(p.retries >= 0, f"producer.retries = {p.retries}: give 0 or more")
    need(p.max_in_flight >= 1, f"producer.max_in_flight = {p.max_in_flight}: give at least 1")
    need(p.linger_ms >= 0, f"producer.linger_ms = {p.linger_ms}: give 0 or more")
    need(p.message_timeout_ms > 0 and p.request_timeout_ms > 0,
         "producer.message_timeout_ms and request_timeout_ms: give milliseconds > 0")
    need(p.partition_choice in PARTITION_CHOICES,
         f"producer.partition_choice = {p.partition_choice!r}: choose one of {', '.join(PARTITION_CHOICES)}")
    need(not p.idempotent or p.retries >= 1,
         "producer.idempotent = true needs producer.retries >= 1 (librdkafka refuses idempotence without retries)")
    c = spec.consumer
    need(c.processes >= 0, f"consumer.processes = {c.processes}: give 0 or more")
    need(c.mode in CONSUMER_MODES, f"consumer.mode = {c.mode!r}: choose one of {', '.join(CONSUMER_MODES)}")
    for phase in fields(PhaseTimeouts):
        seconds = getattr(spec.timeouts, phase.name)
        need(seconds > 0, f"timeouts.{phase.name} = {seconds:g}: give seconds > 0")
    return spec
