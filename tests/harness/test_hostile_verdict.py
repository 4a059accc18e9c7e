"""The verdict never lies about a damaged file (docs/FORMATS.md, "Reading: what is an error";
docs/RELIABILITY.md 7.1).

Each class of damage on a small synthetic run (tests/support/synth), checked with `check_run` and,
once per class, with a real `fencepost check` process (those but the first in the slow set,
`-m slow`: a process costs seconds on a loaded machine):

- only a last line *without* its terminating newline is a torn write; a complete line that fails
  validation is an error wherever it stands (a bad last poll no longer makes an invalid run valid,
  a bad last send invoke no longer makes a valid run invalid with a phantom read);
- a torn last line never leaves a run valid: unknown, unless an anomaly the lost line cannot have
  caused makes it invalid;
- a history with no send and no poll is unknown ("nothing to judge"), never invalid;
- a final.jsonl cut inside a read line makes that partition's final read incomplete, never lost writes;
- every integer field is within int64, in both readers, or the line is an error naming the field;
- a test.json section of the wrong type, an unknown `checker` key, or a test.json that is a
  directory: exit 254;
- a line longer than the readers' bound (64 MiB) is an error, read without holding it.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from fencepost.harness.check import native_load
from fencepost.harness.check.checking import check_run
from fencepost.harness.check.loading import load_run
from fencepost.harness.errors import BadInput
from tests.support.paths import ROOT
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import plant

BASE = generate(GenConfig(seed=3, lines=300, partitions=2, producers=3, consumers=1))
HISTORY = [orjson.dumps(line) + b"\n" for line in BASE.history]
FINAL = [orjson.dumps(line) + b"\n" for line in BASE.final_lines()]
N = len(HISTORY)


def line(**fields) -> bytes:
    return orjson.dumps(fields) + b"\n"


def make(tmp_path: Path, history: list[bytes] | bytes | None = None, final: list[bytes] | bytes | None = None,
         test: bytes | None = None, name: str = "run", run=BASE) -> Path:
    run_dir = tmp_path / name
    run.write(run_dir)
    for file, data in (("history.jsonl", history), ("final.jsonl", final)):
        if data is not None:
            (run_dir / file).write_bytes(data if isinstance(data, bytes) else b"".join(data))
    if test is not None:
        (run_dir / "test.json").write_bytes(test)
    return run_dir


def check(run_dir: Path, jobs: int = 1):
    return check_run(run_dir, write=False, out=io.StringIO(), jobs=jobs)


def cli(run_dir: Path, *args: str) -> tuple[int, str, dict | None]:
    """`fencepost check RUN_DIR` as a user runs it: (exit code, output, results.json or None)."""
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "check", str(run_dir), "--jobs", "1", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    results = run_dir / "results.json"
    return done.returncode, done.stdout + done.stderr, json.loads(results.read_text()) if results.is_file() else None


def both_readers(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    """The outcome of checking `run_dir` with the C reader (where built) and with the exact reader only."""
    outcomes = [check(run_dir)]
    with monkeypatch.context() as m:
        m.setattr(native_load, "available", lambda: False)
        outcomes.append(check(run_dir))
    return outcomes


# --- a complete bad last line is corruption, not a torn write --------------------------------------

GHOST_POLL = [line(index=N, time=10**12, process=99, type="invoke", f="poll"),
              line(index=N + 1, time=10**12 + 1, process=99, type="ok", f="poll",
                   value={"records": [{"topic": "fp", "partition": 0, "offset": 0, "value": "ghost"}]})]


def test_the_ghost_poll_makes_the_run_invalid_when_it_is_well_formed(tmp_path):
    assert check(make(tmp_path, HISTORY + GHOST_POLL)).valid is False


def test_a_complete_last_poll_with_a_wrong_index_is_an_error_not_a_valid_run(tmp_path):
    bad = GHOST_POLL[1].replace(b'"index":%d' % (N + 1), b'"index":%d' % (N + 5))
    code, out, results = cli(make(tmp_path, HISTORY + [GHOST_POLL[0], bad]))
    assert code == 2, out
    assert results["valid"] == "unknown"
    assert any(f"history.jsonl:{N + 2}: field \"index\"" in e for e in results["errors"]), results["errors"]
    assert not any(f"history.jsonl:{N + 2}" in w for w in results["warnings"]), results["warnings"]


LATE_OFFSET = max(o for o, _, _ in BASE.final[0].read) + 1
LATE_SEND = line(index=N, time=10**12, process=98, type="invoke", f="send",
                 value={"topic": "fp", "partition": 0, "value": "late"})


def final_with_late_read() -> list[bytes]:
    final = list(FINAL)
    at = max(i for i, x in enumerate(final) if b'"kind":"read"' in x and b'"partition":0' in x)
    final.insert(at + 1, line(kind="read", topic="fp", partition=0, offset=LATE_OFFSET, value="late",
                              leader_epoch=None))
    return final


def test_the_late_send_whose_value_was_read_is_valid_when_well_formed(tmp_path):
    assert check(make(tmp_path, HISTORY + [LATE_SEND], final_with_late_read())).valid is True


def test_a_complete_bad_last_send_invoke_is_an_error_not_a_phantom_read(tmp_path, monkeypatch):
    bad = LATE_SEND.replace(b'"index":%d' % N, b'"index":%d' % (N + 7))
    for outcome in both_readers(make(tmp_path, HISTORY + [bad], final_with_late_read()), monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert any(f"history.jsonl:{N + 1}:" in e for e in outcome.results["errors"])


def test_a_complete_bad_last_final_line_is_an_error(tmp_path):
    final = FINAL + [line(kind="read", topic="fp", partition=0, offset="x", value="v")]
    outcome = check(make(tmp_path, final=final))
    assert outcome.valid == "unknown"
    assert any(f"final.jsonl:{len(final)}: field \"offset\"" in e for e in outcome.results["errors"])


# --- a torn last line -------------------------------------------------------------------------------

def test_a_torn_last_line_never_leaves_a_run_valid(tmp_path):
    outcome = check(make(tmp_path, b"".join(HISTORY) + b'{"index":%d,"time":1' % N))
    assert outcome.exit_code == 2
    results = outcome.results
    assert any("torn" in r for r in results["reasons"]), results["reasons"]
    assert any(f"history.jsonl:{N + 1}:" in w for w in results["warnings"]), results["warnings"]
    assert not results["errors"]


@pytest.mark.slow
def test_a_torn_last_line_on_the_command_line(tmp_path):
    code, out, results = cli(make(tmp_path, b"".join(HISTORY) + b'{"index":%d,"time":1' % N))
    assert code == 2 and "torn" in out, out
    assert results["valid"] == "unknown" and not results["errors"]


def test_a_torn_last_line_of_final_jsonl_never_leaves_a_run_valid(tmp_path, monkeypatch):
    final = b"".join(FINAL) + b'{"kind":"replica-state","node":"n1","topic":"fp","partition":1,"log_end'
    for outcome in both_readers(make(tmp_path, final=final), monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert any("torn" in r for r in outcome.results["reasons"])


def test_a_torn_send_invoke_whose_value_was_read_is_unknown_not_a_phantom_read(tmp_path, monkeypatch):
    run_dir = make(tmp_path, b"".join(HISTORY) + LATE_SEND[:60], final_with_late_read())
    for outcome in both_readers(run_dir, monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert outcome.results["not_conclusive"].get("phantom-read"), outcome.results


def test_a_torn_last_line_keeps_a_run_invalid_by_an_anomaly_it_cannot_have_caused(tmp_path):
    planted = plant("lost-write/missing", BASE, 1)
    assert check(make(tmp_path, name="plain", run=planted.run)).valid is False
    history = b"".join(orjson.dumps(x) + b"\n" for x in planted.run.history) + b'{"index":'
    outcome = check(make(tmp_path, history, run=planted.run))
    assert outcome.valid is False, outcome.results["reasons"]
    assert outcome.results["anomaly_counts"].get("lost-write")
    assert any("torn" in r for r in outcome.results["reasons"])


def test_a_torn_line_that_was_a_complete_document_is_still_torn(tmp_path):
    """A line whose newline never made it to disk: its operation's effect is unknown."""
    outcome = check(make(tmp_path, b"".join(HISTORY) + GHOST_POLL[0] + GHOST_POLL[1].rstrip(b"\n")))
    assert outcome.valid == "unknown"


# --- nothing to judge -------------------------------------------------------------------------------

@pytest.mark.parametrize("history", [b"", b"\x00" * 100, b"garbage\n", b"\x00\x00\n"],
                         ids=["empty", "nul-bytes", "one-garbage-line", "nul-line"])
def test_a_history_with_no_send_and_no_poll_is_unknown(tmp_path, history):
    outcome = check(make(tmp_path, history))
    assert outcome.valid == "unknown" and outcome.exit_code == 2
    assert any("nothing to judge" in r for r in outcome.results["reasons"])


@pytest.mark.slow
def test_nothing_to_judge_exits_2_on_the_command_line(tmp_path):
    code, out, results = cli(make(tmp_path, b""))
    assert code == 2 and "nothing to judge" in out, out
    assert results["valid"] == "unknown"


# --- a final read cut inside its last line ----------------------------------------------------------

def cut_final(within: int) -> bytes:
    """final.jsonl cut `within` bytes into the third read line of partition 0 (the file ends there)."""
    first = next(i for i, x in enumerate(FINAL) if b'"kind":"read"' in x and b'"partition":0' in x)
    return b"".join(FINAL[:first + 2]) + FINAL[first + 2][:within]


@pytest.mark.parametrize("within", [1, 20, 45, 70])
def test_a_final_read_cut_inside_a_line_is_incomplete_not_lost_writes(tmp_path, monkeypatch, within):
    for outcome in both_readers(make(tmp_path, final=cut_final(within), name=f"cut{within}"), monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert not outcome.results["anomaly_counts"].get("lost-write"), outcome.results["anomaly_counts"]
        assert outcome.results["stats"]["partitions"]["fp-0"]["final_complete"] is False


@pytest.mark.slow
def test_a_cut_final_read_on_the_command_line(tmp_path):
    code, out, results = cli(make(tmp_path, final=cut_final(45)))
    assert code == 2, out
    assert "lost-write" not in results["anomaly_counts"]
    assert any("fp/0" in r and "incomplete" in r for r in results["reasons"]), results["reasons"]


# --- int64 ------------------------------------------------------------------------------------------

def first(kind: str, f: str | None = None, type_: str | None = None) -> int:
    for i, x in enumerate(BASE.history if kind == "history" else BASE.final_lines()):
        if kind == "history" and x["f"] == f and x["type"] == type_ and (f != "poll" or type_ != "ok"
                                                                           or x["value"]["records"]):
            return i
        if kind == "final" and x["kind"] == f:
            return i
    raise AssertionError(f"no {kind} line {f} {type_}")


def with_int(lines: list[bytes], at: int, path: tuple, value: int) -> list[bytes]:
    d = orjson.loads(lines[at])
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    out = list(lines)
    out[at] = orjson.dumps(d) + b"\n"
    return out


HISTORY_INTS = [("send", "ok", ("time",), "time"), ("send", "ok", ("value", "offset"), "value.offset"),
                ("send", "ok", ("value", "leader_epoch"), "value.leader_epoch"),
                ("send", "invoke", ("value", "partition"), "value.partition"),
                ("poll", "invoke", ("time",), "time"), ("poll", "ok", ("value", "records", 0, "offset"),
                                                       "value.records[0].offset"),
                ("poll", "ok", ("value", "records", 0, "leader_epoch"), "value.records[0].leader_epoch"),
                ("assign", "invoke", ("time",), "time"), ("send", "invoke", ("process",), "process")]


@pytest.mark.parametrize("f,type_,path,field,big", [(*case, 2**63) for case in HISTORY_INTS]
                         + [(*HISTORY_INTS[1], 2**64 - 1)],
                         ids=[f"{a}-{b}-{d}" for a, b, _, d in HISTORY_INTS] + ["send-ok-value.offset-2^64-1"])
def test_a_history_integer_beyond_int64_is_an_error_naming_the_field(tmp_path, monkeypatch, f, type_, path,
                                                                     field, big):
    at = first("history", f, type_)
    run_dir = make(tmp_path, with_int(HISTORY, at, path, big))
    for outcome in both_readers(run_dir, monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert any(f"history.jsonl:{at + 1}: field \"{field}\"" in e and "int64" in e
                   for e in outcome.results["errors"]), outcome.results["errors"][:3]


FINAL_INTS = [("read", ("offset",), "offset"), ("read", ("partition",), "partition"),
              ("replica", ("leader_epoch",), "leader_epoch"),
              ("replica-state", ("log_end_offset",), "log_end_offset"),
              ("replica-state", ("high_watermark",), "high_watermark"),
              ("replica-state", ("epochs", 0, 1), "epochs[0]")]


@pytest.mark.parametrize("kind,path,field", FINAL_INTS, ids=[f"{a}-{c}" for a, _, c in FINAL_INTS])
def test_a_final_integer_beyond_int64_is_an_error_naming_the_field(tmp_path, monkeypatch, kind, path, field):
    at = first("final", kind)
    final = FINAL
    if path[0] == "epochs":
        d = orjson.loads(final[at])
        d["epochs"] = [[0, 0]]
        final = list(final)
        final[at] = orjson.dumps(d) + b"\n"
    run_dir = make(tmp_path, final=with_int(final, at, path, 2**63))
    for outcome in both_readers(run_dir, monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert any(f"final.jsonl:{at + 1}: field \"{field}\"" in e and "int64" in e
                   for e in outcome.results["errors"]), outcome.results["errors"][:3]


def test_int64_limits_themselves_are_read(tmp_path):
    at = first("history", "send", "invoke")
    outcome = check(make(tmp_path, with_int(HISTORY, at, ("time",), 2**63 - 1)))
    assert not outcome.results["errors"], outcome.results["errors"]


@pytest.mark.slow
def test_a_huge_time_on_the_command_line_is_unknown_not_a_crash(tmp_path):
    at = first("history", "send", "ok")
    run_dir = make(tmp_path, with_int(HISTORY, at, ("time",), 2**63))
    code, out, results = cli(run_dir)
    assert code == 2, out
    assert any(f"history.jsonl:{at + 1}: field \"time\"" in e for e in results["errors"])
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "report", str(run_dir)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 255 and "Traceback" not in done.stderr, done.stderr[-2000:]


# --- test.json --------------------------------------------------------------------------------------

@pytest.mark.parametrize("test", [b'{"checker": []}', b'{"checker": 5}', b'{"checker": {"bogus": 1}}',
                                  b'{"producer": 5}', b'{"producer": []}', b'{"checker": "x"}'],
                         ids=["checker-list", "checker-int", "checker-unknown-key", "producer-int",
                              "producer-list", "checker-string"])
def test_a_test_json_section_of_the_wrong_type_is_bad_input(tmp_path, test):
    with pytest.raises(BadInput, match="test.json"):
        check(make(tmp_path, test=test))


def test_a_null_section_takes_the_defaults(tmp_path):
    assert check(make(tmp_path, test=b'{"checker": null, "producer": null}')).valid is True


@pytest.mark.slow
def test_a_wrong_checker_section_exits_254_on_the_command_line(tmp_path):
    code, out, _ = cli(make(tmp_path, test=b'{"checker": []}'))
    assert code == 254 and "checker" in out, out


def test_a_test_json_that_is_a_directory_is_bad_input(tmp_path):
    run_dir = make(tmp_path)
    (run_dir / "test.json").unlink()
    (run_dir / "test.json").mkdir()
    with pytest.raises(BadInput, match="test.json"):
        check(run_dir)


@pytest.mark.slow
def test_a_test_json_that_is_a_directory_exits_254(tmp_path):
    run_dir = make(tmp_path)
    (run_dir / "test.json").unlink()
    (run_dir / "test.json").mkdir()
    code, out, _ = cli(run_dir)
    assert code == 254 and "test.json" in out, out


@pytest.mark.slow
def test_a_wrong_checker_section_is_refused_by_a_large_run_too(tmp_path):
    """check_run's forked path (a large history) reads test.json first, for the liveness pass."""
    run_dir = make(tmp_path, test=b'{"checker": {"bogus": 1}}')
    big = generate(GenConfig(seed=4, lines=30_000, partitions=2, producers=4, consumers=1))
    big.write(run_dir)
    (run_dir / "test.json").write_bytes(b'{"checker": {"bogus": 1}}')
    with pytest.raises(BadInput, match="bogus"):
        check(run_dir, jobs=2)


# --- memory: a huge line ----------------------------------------------------------------------------

def peak_rss_check(run_dir: Path) -> tuple[int, str, int]:
    """(exit code, output, peak RSS in bytes) of `fencepost check RUN_DIR --no-write` in a child process."""
    probe = ("import resource, subprocess, sys; "
             "p = subprocess.run([sys.executable, '-m', 'fencepost.harness.cli', 'check', sys.argv[1], '--no-write', "
             "'--jobs', '1'], capture_output=True, text=True); "
             "sys.stdout.write(p.stdout + p.stderr); "
             "print('RSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)")
    done = subprocess.run([sys.executable, "-c", probe, str(run_dir)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    rss = int(done.stdout.rsplit("RSS ", 1)[1].split()[0]) * 1024
    return done.returncode, done.stdout + done.stderr, rss


def sparse_line(path: Path, size: int, prefix: bytes = b"") -> None:
    """`path` holding `prefix` then one line of `size` bytes (NUL bytes, sparse on disk) and its newline."""
    with open(path, "wb") as f:
        f.write(prefix)
        f.truncate(len(prefix) + size - 1)
        f.seek(0, os.SEEK_END)
        f.write(b"\n")


@pytest.mark.slow
@pytest.mark.parametrize("file", ["history.jsonl", "final.jsonl"])
def test_a_300_mb_line_is_an_error_read_within_the_memory_bound(tmp_path, file):
    run_dir = make(tmp_path)
    prefix = b"".join(HISTORY if file == "history.jsonl" else FINAL)
    sparse_line(run_dir / file, 300 << 20, prefix)
    code, out, rss = peak_rss_check(run_dir)
    assert code == 2, out
    number = (N if file == "history.jsonl" else len(FINAL)) + 1
    assert f"{file}:{number}:" in out and "64 MiB" in out, out
    assert rss < 250 << 20, f"peak RSS {rss >> 20} MiB for a 300 MiB line"


def test_a_line_over_the_bound_is_an_error_and_the_rest_is_read(tmp_path, monkeypatch):
    """The bound, made small for the test: a longer line is an error, the next ones are read."""
    import fencepost.harness.rundir.final_reader as final_module
    import fencepost.harness.rundir.history as history_module
    assert history_module.MAX_LINE_BYTES == final_module.MAX_LINE_BYTES == 64 << 20
    monkeypatch.setattr(history_module, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(final_module, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(native_load, "available", lambda: False)
    history = list(HISTORY)
    nemesis = next(i for i, x in enumerate(BASE.history) if x["process"] == "nemesis")
    d = orjson.loads(history[nemesis])
    d["padding"] = "x" * 10_000
    history[nemesis] = orjson.dumps(d) + b"\n"
    run = load_run(make(tmp_path, history))
    assert any(f"history.jsonl:{nemesis + 1}:" in e and "longer than" in e for e in run.errors), run.errors
    assert run.counts.lines == N


def test_a_run_larger_than_the_memory_available_is_unknown_with_a_message(tmp_path, monkeypatch):
    """A multi-GB history on a small machine: not read, `unknown` and why (the bound made small)."""
    from fencepost.harness.check import loading
    run_dir = make(tmp_path)
    need = loading.memory_needed(run_dir / "history.jsonl", run_dir / "final.jsonl")
    monkeypatch.setattr(loading, "available_memory", lambda: need - 1)
    outcome = check(run_dir)
    assert outcome.valid == "unknown" and outcome.exit_code == 2
    assert any("MiB available" in e and "more memory" in e for e in outcome.results["errors"]), \
        outcome.results["errors"]
    monkeypatch.setattr(loading, "available_memory", lambda: need)
    assert check(run_dir).valid is True


# --- a planted anomaly is never made VALID by damage at the end of a file ---------------------------

def damaged_ends(history: list[bytes], final: list[bytes]) -> dict[str, tuple[bytes, bytes]]:
    """(history.jsonl, final.jsonl) with the end of one file damaged, by kind of damage."""
    h, f = b"".join(history), b"".join(final)
    return {"history-torn-mid": (h[:-len(history[-1]) // 2], f), "history-torn-newline": (h[:-1], f),
            "history-last-index": (b"".join(history[:-1]) + history[-1].replace(b'"index":', b'"index":1', 1), f),
            "final-torn-mid": (h, f[:-len(final[-1]) // 2]), "final-torn-newline": (h, f[:-1]),
            "final-last-garbage": (h, f + b"{}\n")}


def planted_never_valid(tmp_path: Path, name: str) -> bool:
    """Check `name` planted, then with each damage at the end; False where it cannot be planted."""
    from tests.support.synth.edit import CannotPlant
    from tests.support.synth.plant import expected_invalid
    try:
        planted = plant(name, BASE, 2)
    except CannotPlant:
        return False
    if not expected_invalid(planted):
        return True
    history = [orjson.dumps(x) + b"\n" for x in planted.run.history]
    final = [orjson.dumps(x) + b"\n" for x in planted.run.final_lines()]
    assert check(make(tmp_path, history, final, name="plain", run=planted.run)).valid is False
    for damage, (h, f) in damaged_ends(history, final).items():
        outcome = check(make(tmp_path, h, f, name=damage, run=planted.run))
        assert outcome.valid is not True, (name, damage)
    return True


@pytest.mark.parametrize("name", ["lost-write/tail", "phantom-read", "truncated-read"])
def test_damage_at_the_end_never_makes_a_planted_anomaly_valid(tmp_path, name):
    assert planted_never_valid(tmp_path, name)


@pytest.mark.slow
def test_damage_at_the_end_never_makes_any_planted_anomaly_valid(tmp_path):
    from tests.support.synth.plant import PLANTERS
    planted = [name for n, name in enumerate(PLANTERS) if planted_never_valid(tmp_path / str(n), name)]
    assert len(planted) >= 15, planted


@pytest.mark.slow
@pytest.mark.parametrize("extra", [0, 1], ids=["at-the-bound", "one-byte-over"])
def test_both_readers_draw_the_line_bound_at_the_same_byte(tmp_path, monkeypatch, extra):
    """A nemesis line of exactly 64 MiB (its newline included) is read by both readers; one byte
    more is an error, and the C reader leaves the file to the exact reader, which names it."""
    from fencepost.harness.rundir.history import MAX_LINE_BYTES
    history = list(HISTORY)
    at = next(i for i, x in enumerate(BASE.history) if x["process"] == "nemesis")
    d = orjson.loads(history[at])
    d["padding"] = ""
    short = len(orjson.dumps(d)) + 1
    d["padding"] = "x" * (MAX_LINE_BYTES - short + extra)
    history[at] = orjson.dumps(d) + b"\n"
    assert len(history[at]) == MAX_LINE_BYTES + extra
    run_dir = make(tmp_path, history)
    table, why = native_load._native.read_history(str(run_dir / "history.jsonl"))
    assert (table is None) == bool(extra), why
    for outcome in both_readers(run_dir, monkeypatch):
        errors = outcome.results["errors"]
        if extra:
            assert outcome.valid == "unknown" and any(f"history.jsonl:{at + 1}:" in e and "64 MiB" in e
                                                      for e in errors), errors
        else:
            assert outcome.valid is True and not errors, errors


def test_a_test_json_that_is_a_fifo_is_bad_input_not_a_hang(tmp_path):
    run_dir = make(tmp_path)
    (run_dir / "test.json").unlink()
    os.mkfifo(run_dir / "test.json")
    with pytest.raises(BadInput, match="not a regular file"):
        check(run_dir)


def test_a_huge_test_json_is_refused_unread(tmp_path):
    run_dir = make(tmp_path)
    with open(run_dir / "test.json", "wb") as f:
        f.truncate(1 << 30)  # sparse: 1 GiB of NUL bytes
    with pytest.raises(BadInput, match="more than a test spec ever holds"):
        check(run_dir)


NEGATIVE_OFFSETS = [("history", "send", "ok", ("value", "offset"), "value.offset"),
                    ("history", "poll", "ok", ("value", "records", 0, "offset"), "value.records[0].offset"),
                    ("final", "read", None, ("offset",), "offset"), ("final", "replica", None, ("offset",), "offset")]


@pytest.mark.parametrize("value", [-5, -(2**63)])
@pytest.mark.parametrize("kind,f,type_,path,field", NEGATIVE_OFFSETS, ids=[f"{a}-{b}" for a, b, *_ in NEGATIVE_OFFSETS])
def test_a_negative_offset_is_an_error_in_both_readers_not_a_crash(tmp_path, monkeypatch, kind, f, type_, path,
                                                                   field, value):
    """Offsets are never negative; the log model of the linearizability check crashed on them (255)."""
    at = first(kind, f, type_)
    if kind == "history":
        run_dir = make(tmp_path, history=with_int(HISTORY, at, path, value))
    else:
        run_dir = make(tmp_path, final=with_int(FINAL, at, path, value))
    for outcome in both_readers(run_dir, monkeypatch):
        assert outcome.valid == "unknown", outcome.results["reasons"]
        assert any(f"{kind}.jsonl:{at + 1}: field \"{field}\"" in e and "negative" in e
                   for e in outcome.results["errors"]), outcome.results["errors"][:3]
