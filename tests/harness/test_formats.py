"""docs/FORMATS.md's JSON Schemas held to real runs, and to files they must refuse.

The three schemas (docs/schemas/: one history.jsonl line, one final.jsonl line,
results.json) must accept every line and results.json of: each run under examples/
(checked in a copy), synthetic runs of tests/support/synth (messy on purpose, and one with
each anomaly planted, so that every anomaly's example shape is met), and one real
`fencepost run` of the own brokers on the process backend. They must reject what the
writers never write (a line without `type`, an unknown `kind`, `valid: "maybe"`, ...),
and their enums must be the names the code defines.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from fencepost.checkers import anomaly
from fencepost.harness.check.checking import check_run
from fencepost.harness.errors import Problems
from fencepost.harness.rundir.final_reader import KINDS, FinalReader
from fencepost.harness.rundir.history import CLIENT_FS, TYPES, HistoryReader
from fencepost.harness.rundir.recorded_test import LINEAR_METHODS
from fencepost.harness.rundir.run_dirs import RUN_NAME
from fencepost.nemesis.catalog import FAULT_CLASSES
from fencepost.nemesis.scenarios import Scenario
from fencepost.nemesis.spec import FAULT_KINDS
from tests.support.paths import ROOT
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import PLANTERS, plant
from tests.support.synth.run import SynthRun

SCHEMAS = ROOT / "docs" / "schemas"
FORMATS_DOC = ROOT / "docs" / "FORMATS.md"
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "history.jsonl").is_file())
HISTORY, FINAL, RESULTS = "history-line", "final-line", "results"
FILES = {HISTORY: "history.jsonl", FINAL: "final.jsonl"}
# Every `f` the nemesis records is spelled where it records it: `recorded(recorder, "f", ...)`,
# a scenario's `self._step(ctx, "f", ...)`, a process fault's start_f/stop_f, a scenario's name.
RECORDED_LITERAL = re.compile(r'(?:recorded\([\w.]+|_step\(ctx), "([a-z][a-z-]*)"')

# A messy synthetic run: failed, unknown and never-completed ops, duplicates from retries,
# offset gaps, uncommitted tails, lagging and stale followers, consumer crashes.
MESSY = GenConfig(seed=11, lines=1_500, idempotent=False, dangling=True, p_offset_gap=0.02,
                  uncommitted_tail=True, lagging_follower=True, stale_follower=True, p_crash=0.03)


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    return {name: json.loads((SCHEMAS / f"{name}.schema.json").read_text())
            for name in (HISTORY, FINAL, RESULTS)}


@pytest.fixture(scope="module")
def validators(schemas) -> dict[str, Draft202012Validator]:
    return {name: Draft202012Validator(schema) for name, schema in schemas.items()}


def errors_of(validator: Draft202012Validator, document: Any) -> list[str]:
    return [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(document)]


def run_problems(run_dir: Path, validators: dict[str, Draft202012Validator]) -> list[str]:
    """Every schema error of the run's history and final lines and of its results.json."""
    problems = []
    for name, file in FILES.items():
        for number, line in enumerate((run_dir / file).read_bytes().splitlines(), 1):
            problems += [f"{file}:{number}: {e}" for e in errors_of(validators[name], orjson.loads(line))]
    results = orjson.loads((run_dir / "results.json").read_bytes())
    problems += [f"results.json: {e}" for e in errors_of(validators[RESULTS], results)]
    return problems


def checked(run_dir: Path) -> dict[str, Any]:
    """`fencepost check` of `run_dir` (writing results.json); the results."""
    return check_run(run_dir, out=io.StringIO(), jobs=1).results


# --- the schemas themselves -------------------------------------------------------------


def test_the_schemas_are_draft_2020_12_schemas(schemas):
    for name, schema in schemas.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name
        Draft202012Validator.check_schema(schema)


def test_the_schema_enums_are_the_names_the_code_defines(schemas):
    history, final, results = schemas[HISTORY], schemas[FINAL], schemas[RESULTS]
    assert tuple(history["properties"]["type"]["enum"]) == TYPES
    assert tuple(history["$defs"]["client"]["properties"]["f"]["enum"]) == CLIENT_FS
    recorded = {f for source in (ROOT / "nemesis").glob("*.py") for f in RECORDED_LITERAL.findall(source.read_text())}
    recorded |= {f for kind in FAULT_KINDS.values() for f in (kind.start_f, kind.stop_f) if f}
    for name, cls in FAULT_CLASSES.items():
        recorded |= {getattr(cls, "start_f", None), getattr(cls, "stop_f", None)} - {None}
        if issubclass(cls, Scenario):
            recorded.add(name)
    assert set(history["$defs"]["nemesis"]["properties"]["f"]["enum"]) == recorded
    assert {d["properties"]["kind"]["const"] for d in final["$defs"].values() if "kind" in d.get("properties", {})} \
        == set(KINDS)
    assert tuple(results["$defs"]["anomalyName"]["enum"]) == anomaly.ALL
    assert set(results["properties"]["anomalies"]["properties"]) == set(anomaly.ALL)
    assert all(name in results["$defs"] for name in anomaly.ALL)
    assert set(results["$defs"]["linearizability"]["properties"]["method"]["enum"]) == {*LINEAR_METHODS, None}


def test_formats_md_names_every_key_kind_and_anomaly_the_schemas_hold(schemas):
    text = FORMATS_DOC.read_text()
    names = [*schemas[RESULTS]["required"], *KINDS, *CLIENT_FS, *anomaly.ALL,
             *schemas[HISTORY]["$defs"]["nemesis"]["properties"]["f"]["enum"]]
    missing = [name for name in names if f"`{name}`" not in text]
    assert not missing, f"docs/FORMATS.md does not name {missing}"
    for name in (HISTORY, FINAL, RESULTS):
        assert f"schemas/{name}.schema.json" in text
    assert "../shared" not in text and "DESIGN.md §" not in text


def test_the_readme_points_at_formats_md_not_at_a_file_users_do_not_have():
    readme = (ROOT / "README.md").read_text()
    assert "docs/FORMATS.md" in readme
    assert "../shared/" not in readme


def test_no_file_of_the_project_cites_a_document_users_do_not_have():
    """Users get the repository, not the design notes it was built from: every citation
    names the project's own docs."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    cited = [name for name in tracked if Path(name).suffix in (".py", ".md", ".toml", ".c", ".h", ".sh", "")
             and (ROOT / name).is_file() and name != "tests/harness/test_formats.py"
             and any(bad in (ROOT / name).read_text(errors="replace")
                     for bad in ("../shared", "DESIGN.md", "DESIGN §", "REFERENCE.md"))]
    assert cited == []


# --- real runs conform -----------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_run_conforms(example, tmp_path, validators):
    run_dir = tmp_path / example.name
    shutil.copytree(example, run_dir)
    checked(run_dir)
    assert run_problems(run_dir, validators) == []


def test_a_messy_synthetic_run_conforms(tmp_path, validators):
    run = generate(MESSY)
    run.write(tmp_path)
    results = checked(tmp_path)
    assert {(line["f"], line["type"]) for line in run.history} >= {
        ("send", "fail"), ("send", "info"), ("poll", "info"), ("crash", "info"), ("assign", "ok")}
    assert results["stats"]["history"]["lines"] == len(run.history)
    assert run_problems(tmp_path, validators) == []


@pytest.fixture(scope="module")
def base_run() -> SynthRun:
    return generate(GenConfig(seed=3, lines=1_500, group=True))  # group: commits, for the commit-* planters


@pytest.mark.parametrize("planter", sorted(PLANTERS))
def test_results_with_each_anomaly_planted_conform(planter, base_run, tmp_path, validators):
    """Every anomaly's example shape, met in a results.json (the lines are the messy run's kind)."""
    planted = plant(planter, base_run, random.Random(1))
    planted.run.write(tmp_path)
    results = checked(tmp_path)
    assert planted.anomaly in results["anomalies"], results["anomaly_counts"]
    assert errors_of(validators[RESULTS], results) == []


@pytest.mark.integration
@pytest.mark.slow
def test_a_real_run_of_the_own_brokers_conforms_and_is_laid_out_as_documented(tmp_path, validators):
    """8 s of traffic on the process backend (no root): kills, pauses and a leader bounce."""
    results_dir = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "fencepost.harness.cli", "run", "--backend", "process", "--time-limit", "8",
         "--nemesis", "kill,pause,leader-bounce", "--nemesis-interval", "2", "--seed", "1",
         "--name", "formats", "--results", str(results_dir)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1, 2), (done.stdout, done.stderr[-3000:])
    run_dir = (results_dir / "formats" / "latest").resolve()
    assert (results_dir / "latest").resolve() == run_dir
    assert RUN_NAME.fullmatch(run_dir.name) and re.search(r"T\d{6}(Z|[+-]\d{4})-[0-9a-f]{6}$", run_dir.name)
    assert f"run directory: {results_dir / 'formats' / run_dir.name}" in done.stdout

    results = orjson.loads((run_dir / "results.json").read_bytes())
    assert done.returncode == {True: 0, False: 1, "unknown": 2}[results["valid"]]
    assert run_problems(run_dir, validators) == []

    history = [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]
    assert [line["index"] for line in history] == list(range(len(history)))
    client = {(line["f"], line["type"]) for line in history if line["process"] != "nemesis"}
    assert client >= {("send", "invoke"), ("send", "ok"), ("poll", "ok"), ("assign", "ok")}
    assert all("value" not in line for line in history if line["f"] == "poll" and line["type"] == "invoke")
    nemesis = [line for line in history if line["process"] == "nemesis"]
    assert {line["type"] for line in nemesis} == {"invoke", "info"} and nemesis[-1]["f"] == "heal"
    final = [orjson.loads(line) for line in (run_dir / "final.jsonl").read_bytes().splitlines()]
    assert {line["kind"] for line in final} == set(KINDS)
    first_replica = next(n for n, line in enumerate(final) if line["kind"].startswith("replica"))
    assert {line["kind"] for line in final[:first_replica]} == {"read", "read-state"}
    assert {line["kind"] for line in final[first_replica:]} == {"replica", "replica-state"}
    assert all("end_offset" in line for line in final if line["kind"] == "read-state")

    test = orjson.loads((run_dir / "test.json").read_bytes())
    assert test["name"] == "formats" and test["backend"] == "process" and test["checker"] == {}
    assert {"fencepost", "python", "confluent_kafka", "librdkafka"} <= set(test["versions"])
    assert test["protocol"].startswith("the own broker, truncation kip320")
    assert (run_dir / "fencepost.log").read_text().rstrip().splitlines()[-1].split(" ", 2)[2].startswith(
        "verdict: ")
    assert sorted(p.name for p in (run_dir / "nodes").iterdir()) == ["controller", "n1", "n2", "n3"]
    assert (run_dir / "nodes" / "n1" / "broker.log").is_file()
    assert (run_dir / "nodes" / "controller" / "controller.log").is_file()
    assert (run_dir / "cluster" / "cluster.json").is_file()
    for page in ("report.html", "history.html", "timeline.html"):
        assert (run_dir / page).is_file(), page
    assert {p.name for p in (run_dir / "plots").iterdir()} >= {
        "latency-raw.png", "latency-quantiles.png", "rate.png", "unseen.png", "realtime-lag.png", "timeline.png"}


# --- what the schemas refuse ----------------------------------------------------------------


SEND = {"index": 0, "time": 5, "process": 3, "type": "invoke", "f": "send",
        "value": {"topic": "fp", "partition": 1, "value": "3-0"}}
ACK = {**SEND, "index": 1, "type": "ok", "value": {**SEND["value"], "offset": 7, "leader_epoch": 2}}
POLL_OK = {"index": 1, "time": 9, "process": 1000, "type": "ok", "f": "poll",
           "value": {"records": [{"topic": "fp", "partition": 0, "offset": 0, "value": "1-0", "leader_epoch": 1}]}}
KILL = {"index": 2, "time": 9, "process": "nemesis", "type": "info", "f": "kill",
        "value": {"target": "one", "nodes": ["n2"]}}


def without(line: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k != key}


POLL = {"index": 0, "time": 8, "process": 1000, "type": "invoke", "f": "poll"}
# name: (the lines before it, the bad line, the field the reader names); indices are set by position.
BAD_HISTORY = {
    "no type": ([], without(SEND, "type"), "type"),
    "type maybe": ([], {**SEND, "type": "maybe"}, "type"),
    "index a string": ([], {**SEND, "index": "0"}, "index"),
    "process a string": ([], {**SEND, "process": "client-3"}, "process"),
    "a send without a value": ([], without(SEND, "value"), "value"),
    "an ack without its offset": ([SEND], {**ACK, "value": SEND["value"]}, "value.offset"),
    "a poll ok without records": ([POLL], {**POLL_OK, "value": {}}, "value"),
    "a poll record whose value is a number": (
        [POLL], {**POLL_OK, "value": {"records": [{**POLL_OK["value"]["records"][0], "value": 12}]}},
        "value.records[0].value"),
    "an assign of a bare partition number": (
        [], {**SEND, "f": "assign", "value": {"partitions": [0]}}, "value.partitions[0]"),
}


BAD_HISTORY_UNREAD = {  # refused by the schema; the reader only warns or does not look
    "an unknown client f": {**SEND, "f": "frobnicate"},
    "a nemesis op of type ok": {**KILL, "type": "ok"},
    "an unknown nemesis f": {**KILL, "f": "meteor"},
    "an invoke with an error": {**SEND, "error": "no"},
    "a nemesis value that is a list": {**KILL, "value": ["n2"]},
}
READ = {"kind": "read", "topic": "fp", "partition": 0, "offset": 0, "value": "1-0", "leader_epoch": 1}
REPLICA_STATE = {"kind": "replica-state", "node": "n1", "topic": "fp", "partition": 0, "log_end_offset": 1,
                 "high_watermark": 1, "leader_epoch": 1, "epochs": [[1, 0]]}
BAD_FINAL = {  # name: (the bad line, the field the reader names)
    "a read without an offset": (without(READ, "offset"), "offset"),
    "a read-state without complete": ({"kind": "read-state", "topic": "fp", "partition": 0}, "complete"),
    "a replica without its node": ({**READ, "kind": "replica"}, "node"),
    "a replica value in base64": ({**READ, "kind": "replica", "node": "n1", "value": {"base64": "AA=="}}, "value"),
    "an epochs entry of one number": ({**REPLICA_STATE, "epochs": [[1]]}, "epochs[0]"),
    "a partition as a string": ({**READ, "partition": "0"}, "partition"),
}


@pytest.mark.parametrize("name", sorted(BAD_HISTORY))
def test_the_history_schema_refuses_what_the_reader_calls_an_error(name, tmp_path, validators):
    before, line, field = BAD_HISTORY[name]
    lines = [{**op, "index": n} for n, op in enumerate(before)]
    line = {**line, "index": len(lines)} if "index" in line and type(line["index"]) is int else line
    assert errors_of(validators[HISTORY], line), f"the schema accepts {name}: {line}"
    good = {**SEND, "index": len(lines) + 1, "process": 4}
    for op in lines:
        assert errors_of(validators[HISTORY], op) == []
    assert reader_errors(tmp_path / "history.jsonl", [*lines, line, good], field)


@pytest.mark.parametrize("name", sorted(BAD_HISTORY_UNREAD))
def test_the_history_schema_refuses_what_no_writer_writes(name, validators):
    assert errors_of(validators[HISTORY], BAD_HISTORY_UNREAD[name]), name


@pytest.mark.parametrize("name", sorted(BAD_FINAL))
def test_the_final_schema_refuses_what_the_reader_calls_an_error(name, tmp_path, validators):
    line, field = BAD_FINAL[name]
    assert errors_of(validators[FINAL], line), f"the schema accepts {name}: {line}"
    assert reader_errors(tmp_path / "final.jsonl", [line, READ], field)


def test_the_final_schema_refuses_an_unknown_kind_which_the_reader_ignores(tmp_path, validators):
    line = {**READ, "kind": "snapshot"}
    assert errors_of(validators[FINAL], line)
    problems = Problems()
    path = tmp_path / "final.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n" + orjson.dumps(READ) + b"\n")
    assert len(list(FinalReader(path, problems))) == 1
    assert problems.error_count == 0 and "snapshot" in problems.warnings[0]


def test_unknown_fields_are_allowed_in_the_line_formats_and_nowhere_in_results(tmp_path, validators):
    assert errors_of(validators[HISTORY], {**ACK, "client": "librdkafka"}) == []
    assert errors_of(validators[FINAL], {**READ, "source": "dump"}) == []
    run = generate(GenConfig(seed=5, lines=300))
    run.write(tmp_path)
    results = checked(tmp_path)
    assert errors_of(validators[RESULTS], results) == []
    assert errors_of(validators[RESULTS], {**results, "score": 3})


def results_variants(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """results.json with one thing wrong each."""
    first = next(iter(results["stats"]["partitions"]))
    example = results["anomalies"]["lost-write"][0]
    return {
        "valid maybe": {**results, "valid": "maybe"},
        "valid as a string": {**results, "valid": "true"},
        "no anomaly_counts": without(results, "anomaly_counts"),
        "an unknown anomaly counted": {**results, "anomaly_counts": {"lost-update": 1}},
        "a count of zero": {**results, "anomaly_counts": {"lost-write": 0}},
        "an example of another anomaly": {**results, "anomalies": {"duplicate": [example]}},
        "an example without its explanation": {
            **results, "anomalies": {"lost-write": [without(example, "explanation")]}},
        "a lost write that is neither missing nor overwritten": {
            **results, "anomalies": {"lost-write": [{**example, "how": "mislaid"}]}},
        "21 examples": {**results, "anomalies": {"lost-write": [example] * 21}},
        "an unknown invalid anomaly": {**results, "invalid_anomalies": ["lost-update"]},
        "a partition stat of the wrong type": {**results, "stats": {**results["stats"], "partitions": {
            first: {**results["stats"]["partitions"][first], "final_complete": "yes"}}}},
        "a linearizability method unheard of": {**results, "linearizability": {
            "fp-0": {"linearizable": True, "explored": 0, "method": "guess", "counterexample_file": None}}},
    }


def test_the_results_schema_refuses_what_fencepost_never_writes(base_run, tmp_path, validators):
    planted = plant("lost-write/missing", base_run, random.Random(1))
    planted.run.write(tmp_path)
    results = checked(tmp_path)
    assert errors_of(validators[RESULTS], results) == []
    accepted = [name for name, variant in results_variants(results).items()
                if not errors_of(validators[RESULTS], variant)]
    assert accepted == [], f"the results schema accepts: {accepted}"


def reader_errors(path: Path, lines: list[dict[str, Any]], field: str) -> list[str]:
    """The exact reader's errors for `lines` (history.jsonl or final.jsonl, by the name of
    `path`) that name `field`; the bad line is never the last (that would be a torn write,
    only a warning)."""
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    problems = Problems()
    if path.name == "final.jsonl":
        list(FinalReader(path, problems))
    else:
        list(HistoryReader(path, problems).operations())
    named = [e for e in problems.errors if f'field "{field}"' in e]
    assert named, problems.errors
    return named
