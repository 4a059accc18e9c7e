"""Fuzzing the command line and the TOML specs: every bad value exits 254, naming the option or field and the value.

`fencepost run` is driven in-process (harness.cli.main with argv) so hundreds of
examples take seconds, with a tripwire: `--results` lies under a regular file,
so a value that slipped through validation ends in "cannot make a run
directory" (and the test fails) before any host, process or cluster exists.
One subprocess example proves the real entry point behaves the same. The other
verbs (check, campaign, analyze --conf, compare, cluster up, nemesis) get bad
values each, with the same tripwire where they would start something.

Fast: 10 examples per fuzz test (~2 s in all). Slow (`-m slow`): 400 each, and the subprocess.
"""
from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.harness.run import spec as run_spec
from fencepost.harness.run.spec import CHECKER_KEYS, MAX_NODES, MAX_PARTITIONS, MAX_PROCESSES, MAX_SECONDS, SECTIONS
from tests.support.cli import Outcome, in_process
from tests.support.paths import ROOT

WORK = Path(tempfile.mkdtemp(prefix="cli-fuzz-"))
atexit.register(shutil.rmtree, WORK, True)
BLOCKER = WORK / "a-file"
BLOCKER.write_text("not a folder\n")
TRIPWIRE = ["--results", str(BLOCKER / "results")]  # nothing can be made below a regular file
SLIPPED = "cannot make a run directory"

FAST = settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))


cli = in_process


def refused(outcome: Outcome, *names: str) -> None:
    """Exit 254, no traceback, nothing slipped to the run, and every one of `names` in the message."""
    assert outcome.code == 254, f"exit {outcome.code}: {outcome.err[-1500:]}"
    assert "Traceback" not in outcome.err and "crashed" not in outcome.err, outcome.err
    assert SLIPPED not in outcome.err, f"a bad value was not refused in validation: {outcome.err}"
    for name in names:
        assert name in outcome.err, f"{name!r} not in the message: {outcome.err!r}"
    assert not (BLOCKER / "results").exists()


# -- bad values by kind ------------------------------------------------------------------------

junk_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda t: t.strip() and not t.startswith("-"))
units = st.sampled_from(["10s", "5m", "1h", "500ms", "60 s", "1_000x", "1e3ops", "ten", "1,5", "0x10s"])
not_a_number = st.one_of(units, junk_text.filter(lambda t: _float_or_none(t) is None))
not_an_int = st.one_of(units, st.sampled_from(["1.5", "3.0", "1e3"]),
                       junk_text.filter(lambda t: _int_or_none(t) is None))
beyond_64_bits = st.one_of(st.integers(min_value=2**63), st.integers(max_value=-(2**63) - 1))


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def bad_seconds() -> st.SearchStrategy[float]:
    return st.one_of(st.floats(max_value=0), st.just(math.nan), st.just(math.inf), st.just(-math.inf),
                     st.floats(min_value=MAX_SECONDS * 1.01, allow_infinity=False))


def shown(value: object) -> str:
    """How a message shows a value: enough of it to recognise."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if math.isinf(value) else "")
    return str(value)[:20] if isinstance(value, int) else ""


# -- fencepost run: flags ----------------------------------------------------------------------

INT_FLAGS = {"--nodes": (1, MAX_NODES), "--concurrency": (1, MAX_PROCESSES)}
FLOAT_FLAGS = {"--time-limit": "time_limit", "--nemesis-interval": "nemesis.interval", "--rate": "rate"}
# (what the message names, the values allowed): flags with argparse choices are refused by
# argparse, naming the flag; the others by the spec, naming its key.
CHOICE_FLAGS = {"--backend": ("--backend", ("netns", "process", "docker", "ssh", "")),
                "--truncation": ("--truncation", ("hw", "kip101", "kip279", "kip320", "release")),
                "--flush": ("--flush", ("os", "fsync", "lazy", "")),
                "--nemesis-schedule": ("--nemesis-schedule", ("fixed", "random", "scripted")),
                "--system": ("system", ())}


@st.composite
def bad_run_flag(draw) -> tuple[list[str], list[str]]:
    """(argv after `run`, names the message must hold)."""
    kind = draw(st.sampled_from(["int-range", "int-type", "float", "float-type", "choice", "name", "nemesis",
                                 "option", "pair", "seed", "empty"]))
    if kind == "seed":
        value = draw(beyond_64_bits)
        return ["--seed", str(value)], ["seed", str(value)[:20]]
    if kind == "empty":
        flag = draw(st.sampled_from(["--truncation", "--nemesis-schedule", "--system", "--name"]))
        return [f"{flag}="], [CHOICE_FLAGS.get(flag, ("name",))[0]]
    if kind == "int-range":
        flag = draw(st.sampled_from(sorted(INT_FLAGS)))
        low, high = INT_FLAGS[flag]
        value = draw(st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1)))
        return [flag, str(value)], [flag.lstrip("-"), str(value)[:20]]
    if kind == "int-type":
        flag = draw(st.sampled_from([*sorted(INT_FLAGS), "--seed"]))
        return [f"{flag}={(value := draw(not_an_int))}"], [flag, "invalid int value"]
    if kind == "float":
        flag = draw(st.sampled_from(sorted(FLOAT_FLAGS)))
        value = draw(bad_seconds() if flag != "--rate" else st.one_of(st.floats(max_value=0), st.just(math.nan),
                                                                      st.floats(min_value=2e6)))
        return [f"{flag}={value!r}"], [FLOAT_FLAGS[flag], shown(value)]
    if kind == "float-type":
        flag = draw(st.sampled_from(sorted(FLOAT_FLAGS)))
        return [f"{flag}={draw(not_a_number)}"], [flag, "invalid float value"]
    if kind == "choice":
        flag = draw(st.sampled_from(sorted(CHOICE_FLAGS)))
        key, allowed = CHOICE_FLAGS[flag]
        value = draw(st.one_of(units, junk_text).filter(
            lambda t: t not in allowed and not t.startswith("kafka") and t != "own"))
        return [f"{flag}={value}"], [key, repr(value)[:20]]
    if kind == "name":
        value = draw(st.one_of(st.just("latest"), st.just("."), st.text(min_size=101, max_size=150).filter(
            lambda t: "\x00" not in t), junk_text.map(lambda t: f"a/{t}"), junk_text.map(lambda t: f".{t}"),
            junk_text.map(lambda t: f"a\n{t}")))
        return [f"--name={value}"], ["name ="]
    if kind == "nemesis":
        good = draw(st.lists(st.sampled_from(["kill", "pause", "partition:majorities-ring", "kill:leader"]),
                             max_size=2))
        bad = draw(st.one_of(junk_text.filter(lambda t: t.strip() not in (
            "kill", "pause", "partition", "power-cut", "leader-bounce", "zombie", "fast-leader-change", "none")
            and "," not in t
            and ":" not in t), st.sampled_from(["kill:nowhere", "partition:", "zombie:x", "pause:bridge", ","])))
        faults = ",".join([*good, bad])
        assert faults.strip() not in ("", "none")
        return [f"--nemesis={faults}"], ["nemesis.faults"]
    if kind == "option":
        flag = draw(st.sampled_from(["--backend-option", "--system-option"]))
        key = draw(st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(
            lambda k: k not in ("subnet", "truncation", "flush", "flush_interval_ms", "session_timeout_ms",
                                "replica_lag_time_max_ms", "min_insync_replicas", "hw_checkpoint_interval_ms")))
        return [flag, f"{key}=1", "--backend", "netns"], [flag.lstrip("-").replace("-option", "_options"), key]
    flag = draw(st.sampled_from(["--backend-option", "--system-option"]))
    return [flag, draw(junk_text.filter(lambda t: "=" not in t))], [flag]


def test_run_with_no_bad_value_reaches_the_tripwire():
    """The tripwire itself: a valid spec goes as far as making the run directory, and stops there."""
    outcome = cli(["run", *TRIPWIRE])
    assert outcome.code == 254 and SLIPPED in outcome.err and "results =" in outcome.err, outcome.err


def _check_run_flag(case):
    argv, names = case
    refused(cli(["run", *TRIPWIRE, *argv]), *names)


@FAST
@given(bad_run_flag())
def test_bad_run_flags_exit_254_naming_them(case):
    _check_run_flag(case)


@pytest.mark.slow
@SLOW
@given(bad_run_flag())
def test_bad_run_flags_exit_254_naming_them_many(case):
    _check_run_flag(case)


# -- fencepost run --config FILE.toml ----------------------------------------------------------

def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else
                                                 "-inf" if value == -math.inf else repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def toml_string(text: str) -> str:
    escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F or c in '"\\' else c for c in text)
    return f'"{escaped}"'


def toml_text(config: dict) -> str:
    top = [f"{toml_string(k)} = {toml_value(v)}" for k, v in config.items() if not isinstance(v, dict)]
    tables = [f"[{name}]\n" + "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in table.items())
              for name, table in config.items() if isinstance(table, dict)]
    return "\n".join(top) + "\n" + "\n".join(tables)


int64 = st.integers(-(2**63), 2**63 - 1)
any_int = st.integers()  # tomllib reads whole numbers of any size
wrong_for = {
    "int": st.one_of(junk_text, st.floats(allow_nan=False).filter(lambda f: not f.is_integer()), st.booleans(),
                     st.lists(st.integers(), max_size=2)),
    "float": st.one_of(units, junk_text, st.booleans(), st.lists(st.floats(allow_nan=False), max_size=2)),
    "str": st.one_of(any_int, st.floats(allow_nan=False), st.booleans(), st.lists(junk_text, max_size=2)),
    "bool": st.one_of(any_int, junk_text, st.floats(allow_nan=False)),
}
# values of the right type that are out of range (None: any value of the type is accepted)
out_of_range = {
    "nodes": st.one_of(st.integers(max_value=0), st.integers(MAX_NODES + 1)),
    "concurrency": st.one_of(st.integers(max_value=0), st.integers(MAX_PROCESSES + 1)),
    "time_limit": bad_seconds(), "rate": st.one_of(st.floats(max_value=0), st.just(math.nan), st.just(math.inf)),
    "name": st.sampled_from(["", "latest", ".hidden", "a/b", "x" * 101, "tab\there", "nul\x00"]),
    "seed": beyond_64_bits,
    "system": junk_text.filter(lambda t: t != "own" and not t.startswith("kafka")),
    "backend": junk_text.filter(lambda t: t not in ("netns", "process", "docker", "ssh")),
    "truncation": junk_text.filter(lambda t: t not in ("hw", "kip101", "kip279", "kip320", "release", "")),
    "flush": junk_text.filter(lambda t: t not in ("os", "fsync", "lazy")),
    "topic.name": st.sampled_from(["", ".", "..", "with space", "ü", "x" * 250, "a/b"]),
    "topic.partitions": st.one_of(st.integers(max_value=0), st.integers(MAX_PARTITIONS + 1)),
    "topic.replication_factor": st.one_of(st.integers(max_value=0), st.integers(4)),
    "topic.min_insync_replicas": st.one_of(st.integers(max_value=0), st.integers(4)),
    "nemesis.faults": st.sampled_from(["bogus", "kill,", ",", "kill:nowhere", "partition:leader-ish", "zombie:x"]),
    "nemesis.schedule": junk_text.filter(lambda t: t not in ("fixed", "random", "scripted")),
    "nemesis.interval": bad_seconds(),
    "producer.retries": st.one_of(st.integers(max_value=-1), st.integers(2**31)),
    "producer.max_in_flight": st.one_of(st.integers(max_value=0), st.integers(1_000_001)),
    "producer.linger_ms": st.one_of(st.integers(max_value=-1), st.integers(900_001)),
    "producer.batch_messages": st.one_of(st.integers(max_value=-1), st.integers(1_000_001)),
    "producer.message_timeout_ms": st.one_of(st.integers(max_value=0), st.integers(2**31)),
    "producer.request_timeout_ms": st.one_of(st.integers(max_value=0), st.integers(900_001)),
    "producer.partition_choice": junk_text.filter(lambda t: t not in ("round-robin", "random", "key")),
    "consumer.processes": st.one_of(st.integers(max_value=-1), st.integers(MAX_PROCESSES + 1)),
    "consumer.mode": junk_text.filter(lambda t: t not in ("assign", "subscribe", "mixed")),
    "consumer.group": st.sampled_from(["", "tab\there", "x" * 250]),
    "consumer.subscribe_p": st.one_of(st.floats(max_value=-0.001), st.floats(min_value=1.001), st.just(math.nan)),
    "consumer.commit_interval": st.one_of(st.floats(max_value=-0.001), st.just(math.nan), st.just(math.inf)),
    "clients.producer": junk_text.filter(lambda t: t not in ("shared", "per-process", "")),
    "clients.crash_interval": st.one_of(st.floats(max_value=-0.001), st.just(math.nan), st.just(math.inf)),
    "clients.debug": st.sampled_from(["nosuchcontext", "fetch,nosuch", "fetch;consumer", "x" * 300]),
    "clients.debug_lines": st.one_of(st.integers(max_value=0), st.integers(10_000_001)),
    **{f"timeouts.{phase}": bad_seconds() for phase in ("setup", "heal", "quiesce", "final_read", "teardown")},
}


def _scalar_fields() -> dict[str, str]:
    """Every typed field of the spec, dotted, with its type's name."""
    found = {}
    for f in run_spec.TestSpec.__dataclass_fields__.values():
        if f.name in SECTIONS:
            for g in SECTIONS[f.name].__dataclass_fields__.values():
                if str(g.type) in wrong_for:
                    found[f"{f.name}.{g.name}"] = str(g.type)
        elif str(f.type) in wrong_for and f.name not in ("notes", "results"):  # --results (the tripwire) wins
            found[f.name] = str(f.type)
    return found


SCALAR_FIELDS = _scalar_fields()


def test_every_scalar_field_has_bad_values():
    booleans = {key for key, kind in SCALAR_FIELDS.items() if kind == "bool"}  # a wrong type is their only bad value
    assert booleans >= {"producer.idempotent", "topic.unclean_leader_election"}
    assert set(SCALAR_FIELDS) - booleans <= set(out_of_range)


def _nested(key: str, value: object) -> dict:
    section, _, name = key.rpartition(".")
    return {section: {name: value}} if section else {name: value}


@st.composite
def bad_config(draw) -> tuple[dict, list[str]]:
    """(a TOML table with one bad setting, names the message must hold)."""
    kind = draw(st.sampled_from(["type"] * 3 + ["range"] * 4 + ["unknown", "unknown-in-section", "section",
                                                                 "script", "options", "checker"]))
    if kind in ("type", "range"):
        key = draw(st.sampled_from(sorted(SCALAR_FIELDS if kind == "type" else out_of_range)))
        value = draw(wrong_for[SCALAR_FIELDS[key]] if kind == "type" else out_of_range[key])
        return _nested(key, value), [key.rpartition(".")[2]]
    if kind == "unknown":
        key = draw(st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True).filter(
            lambda k: k not in run_spec.TestSpec.__dataclass_fields__))
        return {key: draw(st.one_of(int64, junk_text))}, [f"unknown setting {key}"]
    if kind == "unknown-in-section":
        section = draw(st.sampled_from(sorted(SECTIONS)))
        key = draw(st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True).filter(
            lambda k: k not in SECTIONS[section].__dataclass_fields__))
        return {section: {key: 1}}, [f"{section}.{key}"]
    if kind == "section":
        section = draw(st.sampled_from([*sorted(SECTIONS), "backend_options", "system_options", "checker"]))
        return {section: draw(st.one_of(int64, junk_text, st.lists(int64, max_size=2)))}, [section]
    if kind == "script":
        entry = draw(st.sampled_from([{"at": -1, "action": "heal"}, {"at": 10**30, "action": "heal"},
                                      {"at": "soon", "action": "heal"},
                                      {"at": 1, "action": "start bogus"}, {"at": 1}, {"at": 1, "action": 7},
                                      {"at": math.inf, "action": "heal"}, {"at": 1, "action": "dance"}]))
        return {"nemesis": {"schedule": "scripted", "script": [entry]}}, ["nemesis.script"]
    if kind == "options":
        which = draw(st.sampled_from(["system_options", "backend_options"]))
        key = draw(st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True).filter(lambda k: k not in (
            "subnet", "truncation", "flush", "flush_interval_ms", "session_timeout_ms", "replica_lag_time_max_ms",
            "min_insync_replicas", "hw_checkpoint_interval_ms")))
        if which == "system_options" and draw(st.booleans()):
            key = draw(st.sampled_from(["session_timeout_ms", "replica_lag_time_max_ms"]))
            return {"backend": "netns", which: {key: draw(st.one_of(st.integers(max_value=-1), junk_text,
                                                                    st.integers(min_value=2**63)))}}, [key]
        return {"backend": "netns", which: {key: 1}}, [which, key]
    key = draw(st.sampled_from([*CHECKER_KEYS, "colour"]))
    value = {"invalid": draw(st.sampled_from([["bogus"], "lost-write", 3])), "linearizability": "yes",
             "linear_method": "guess", "search_budget": draw(st.sampled_from([0, -5, "many", 10**20])),
             "colour": 1}[key]
    return {"checker": {key: value}}, [f"checker.{key}" if key != "colour" else "colour"]


def _check_config(case) -> None:
    config, names = case
    path = WORK / f"spec-{os.getpid()}.toml"
    path.write_text(toml_text(config))
    refused(cli(["run", "--config", str(path), *TRIPWIRE]), *names)


@FAST
@given(bad_config())
def test_bad_toml_settings_exit_254_naming_them(case):
    _check_config(case)


@pytest.mark.slow
@SLOW
@given(bad_config())
def test_bad_toml_settings_exit_254_naming_them_many(case):
    _check_config(case)


@FAST
@given(st.binary(max_size=200))
def test_garbage_toml_files_exit_254(data):
    path = WORK / f"garbage-{os.getpid()}.toml"
    path.write_bytes(data)
    outcome = cli(["run", "--config", str(path), *TRIPWIRE])
    # garbage that happens to be a valid empty or tiny table reaches the tripwire: that is fine here
    assert outcome.code == 254 and "Traceback" not in outcome.err, outcome.err
    assert str(path) in outcome.err or SLIPPED in outcome.err or "setting" in outcome.err, outcome.err


def test_regressions_found_by_this_fuzz():
    """Each was accepted by validation and failed later: after the cluster was up, or with a crash."""
    for argv, names in [
        (["--nemesis", "bogus"], ["nemesis.faults", "bogus"]),  # was refused only once the cluster was up
        (["--nodes", "99999999999"], ["nodes", "99999999999"]),  # was a list of 1e11 node names
        (["--time-limit", "inf"], ["time_limit", "inf"]),
        (["--time-limit", "1e300"], ["time_limit"]),  # overflowed threading's wait
        (["--name", "latest"], ["name", "latest"]),  # results/latest is the newest run's symlink
        (["--name", "a\x00b"], ["name"]),  # crashed (ValueError: embedded null byte)
        (["--system", "bogus"], ["system", "bogus"]),  # was refused after the run directory was made
        (["--backend", "netns", "--backend-option", "foo=1"], ["backend_options", "foo"]),
        (["--system-option", "foo=1"], ["system_options", "foo"]),
        (["--concurrency", "10000000000"], ["concurrency"]),
        (["--seed", str(10**30)], ["seed", str(10**30)]),  # crashed writing test.json (orjson: 64 bits)
    ]:
        refused(cli(["run", *TRIPWIRE, *argv]), *names)
    bad_utf8 = WORK / "not-utf8.toml"
    bad_utf8.write_bytes(b'name = "\xff\xfe"\n')
    refused(cli(["run", "--config", str(bad_utf8), *TRIPWIRE]), str(bad_utf8), "UTF-8")  # crashed 255
    # results under a regular file crashed with NotADirectoryError (255)
    outcome = cli(["run", *TRIPWIRE])
    assert outcome.code == 254 and "results =" in outcome.err and "Traceback" not in outcome.err


@pytest.mark.integration
@pytest.mark.slow
def test_the_real_entry_point_refuses_the_same_way():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for argv, names in [(["run", "--nodes", "0"], ["nodes = 0"]),
                        (["run", "--nemesis", "kill,bogus"], ["nemesis.faults", "bogus"])]:
        installed = shutil.which("fencepost")
        entry = [installed] if installed else [sys.executable, "-m", "fencepost.harness.cli"]
        done = subprocess.run([*entry, *argv, *TRIPWIRE], cwd=WORK, env=env,
                              capture_output=True, text=True, timeout=120)
        refused(Outcome(done.returncode, done.stderr), *names)


# -- the other verbs ---------------------------------------------------------------------------

def test_check_refuses_bad_options_and_paths():
    refused(cli(["check", str(WORK), "--jobs", "0"]), "--jobs", "'0'")
    refused(cli(["check", str(WORK), "--jobs", "many"]), "--jobs", "many")
    refused(cli(["check", str(WORK / "nowhere")]), "nowhere")
    refused(cli(["check", str(BLOCKER)]), "a-file")
    refused(cli(["check", str(WORK), "--colour"]), "--colour")


@st.composite
def bad_campaign(draw) -> tuple[str, list[str]]:
    kind = draw(st.sampled_from(["key", "name", "matrix", "value", "base", "cases"]))
    if kind == "key":
        key = draw(st.from_regex(r"[a-z]{1,10}", fullmatch=True).filter(
            lambda k: k not in ("name", "base", "matrix", "cases")))
        return f"{key} = 1\n", [key]
    if kind == "name":
        name = draw(st.sampled_from(["", "../up", "a b", ".x"]))
        return f"name = {json.dumps(name)}\n", ["name ="]
    if kind == "matrix":
        return "[matrix]\nseed = " + draw(st.sampled_from(["[]", "3", '"x"'])) + "\n", ["matrix.seed"]
    if kind == "value":
        config, names = draw(bad_config().filter(  # one setting; a campaign names each run "run" itself
            lambda c: len(c[0]) == 1 and "name" not in c[0] and "script" not in str(c[0])))
        key, value = next(iter(config.items()))
        if isinstance(value, dict) and len(value) == 1 and key in SECTIONS:
            inner, inner_value = next(iter(value.items()))
            key, value = f"{key}.{inner}", inner_value
        return f"[matrix]\n{toml_string(key)} = [{toml_value(value)}]\n", ["run 0001", *names]
    if kind == "base":
        return "base = " + draw(st.sampled_from(["3", '"x"', "[1]"])) + "\n", ["[base]"]
    return "cases = " + draw(st.sampled_from(["3", "[]", "[1]"])) + "\n", ["cases"]


def _check_campaign(case) -> None:
    text, names = case
    path = WORK / f"campaign-{os.getpid()}.toml"
    path.write_text(text)
    refused(cli(["campaign", str(path), *TRIPWIRE]), str(path), *names)


@FAST
@given(bad_campaign())
def test_bad_campaign_files_exit_254_before_any_run(case):
    _check_campaign(case)


@pytest.mark.slow
@SLOW
@given(bad_campaign())
def test_bad_campaign_files_exit_254_before_any_run_many(case):
    _check_campaign(case)


def test_analyze_compare_cluster_and_nemesis_refuse_bad_values():
    refused(cli(["analyze", str(WORK), "--conf", "spark.executor.memory"]), "--conf", "spark.executor.memory")
    refused(cli(["analyze", str(WORK), "--conf", "=4g"]), "--conf", "=4g")
    refused(cli(["analyze", str(WORK / "nowhere")]), "nowhere")
    refused(cli(["compare", str(WORK / "nowhere")]), "nowhere")
    refused(cli(["compare"]), "PATH")
    refused(cli(["compare", str(WORK / "nowhere"), "--format", "xml"]), "--format", "xml")
    refused(cli(["compare", str(WORK / "nowhere"), "--baseline", "own:"]), "--baseline", "own:", "SYSTEM:TRUNCATION")
    for argv, names in [(["--nodes", "0"], ["--nodes 0"]), (["--nodes", "10000000000"], ["--nodes 10000000000"]),
                        (["--partitions", "0"], ["--partitions 0"]), (["--topic", "a b"], ["--topic", "a b"]),
                        (["--replication-factor", "9"], ["--replication-factor 9"]),
                        (["--truncation", "kip999"], ["--truncation", "kip999"]),
                        (["--backend", "vm"], ["--backend", "vm"]), (["--name", "../up"], ["../up"]),
                        (["--system", "bogus"], ["bogus"]), (["--system-option", "nokey"], ["--system-option"]),
                        (["--system-option", "colour=1"], ["colour"])]:
        refused(cli(["cluster", "up", *argv, *TRIPWIRE]), *names)
    for argv, names in [(["start", "bogus"], ["bogus"]), (["start", "kill", "--target", "nowhere"], ["nowhere"]),
                        (["start", "kill", "--timeout", "nan"], ["--timeout", "nan"]),
                        (["start", "kill", "--seed", "x"], ["--seed", "'x'"]), (["dance"], ["dance"]),
                        (["heal", "--cluster", "nope", "--results", str(WORK)], ["nope"]),
                        # a regular file on the way to the results folder (it crashed with 255)
                        (["heal", "--results", str(BLOCKER / "under")], ["a-file", "--results"])]:
        refused(cli(["nemesis", *argv, *([] if "--results" in argv else TRIPWIRE)]), *names)
    refused(cli(["no-such-verb"]), "no-such-verb")
