"""`fencepost check` end to end on tiny runs: exit codes (docs/FORMATS.md, exit codes),
results.json per its contract (docs/FORMATS.md, results.json), and the plumbing of unknown verdicts."""
from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from fencepost.harness.check import checking
from fencepost.harness.cli import main
from tests.support.run_builder import History, final_read, write_run


def two_acked_sends():
    h = History()
    h.assign(9, [0])
    h.invoke_send(0, 0, "0-1")
    h.complete_send(0, 0, "0-1", offset=0)
    h.invoke_send(1, 0, "1-1")
    h.complete_send(1, 0, "1-1", offset=1)
    return h


def valid_run(run_dir):
    h = two_acked_sends()
    h.poll(9, [(0, 0, "0-1"), (0, 1, "1-1")])
    return write_run(run_dir, h, final_read(0, [(0, "0-1"), (1, "1-1")], complete=True))


def lost_write_run(run_dir, complete=True):
    """Offset 1 was acked but the final read does not hold it."""
    return write_run(run_dir, two_acked_sends(), final_read(0, [(0, "0-1")], complete=complete))


def results_of(run_dir):
    return orjson.loads((run_dir / "results.json").read_bytes())


def test_a_valid_run_exits_0_and_writes_results_per_the_contract(tmp_path, capsys):
    run_dir = valid_run(tmp_path / "run")
    assert main(["check", str(run_dir)]) == 0
    results = results_of(run_dir)
    assert results["valid"] is True
    assert set(results) >= {"valid", "anomaly_counts", "anomalies", "stats", "checked"}
    assert results["anomaly_counts"] == {} and results["anomalies"] == {}
    assert results["checked"]["ops"] == 8 and results["checked"]["partitions"] == 1
    assert isinstance(results["checked"]["seconds"], float)
    assert results["reasons"] == [] and results["errors"] == [] and results["warnings"] == []
    assert results["linearizability"]["fp-0"]["linearizable"] is True
    assert results["stats"]["partitions"]["fp-0"]["sends_ok"] == 2
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and str(run_dir / "results.json") in out


def test_a_lost_write_exits_1_with_the_anomaly_its_ops_and_the_counterexample(tmp_path, capsys):
    run_dir = lost_write_run(tmp_path / "run")
    assert main(["check", str(run_dir)]) == 1
    results = results_of(run_dir)
    assert results["valid"] is False
    assert results["anomaly_counts"]["lost-write"] == 1
    [example] = results["anomalies"]["lost-write"]
    assert (example["type"], example["topic"], example["partition"]) == ("lost-write", "fp", 0)
    # The ops it names come with their history lines.
    assert [op["index"] for op in example["history"]] == [4, 5]
    assert example["history"][1]["value"]["offset"] == 1
    out = capsys.readouterr().out
    assert "lost-write" in out and "verdict: INVALID" in out


def test_the_page_of_a_partition_found_not_linearizable_is_written(tmp_path):
    run_dir = lost_write_run(tmp_path / "run")
    assert main(["check", str(run_dir)]) == 1
    linear = results_of(run_dir)["linearizability"]["fp-0"]
    assert linear["linearizable"] is False and linear["method"] == "search"
    assert linear["explored"] > 0 and linear["counterexample_file"] == "linear/fp-0.html"
    page = (run_dir / "linear" / "fp-0.html").read_text()
    assert page.lower().startswith("<!doctype html") and "final" in page


def test_without_final_jsonl_the_verdict_is_unknown_with_the_reason(tmp_path, capsys):
    h = two_acked_sends()
    run_dir = write_run(tmp_path / "run", h)
    assert main(["check", str(run_dir)]) == 2
    results = results_of(run_dir)
    assert results["valid"] == "unknown"
    assert any("final.jsonl is missing" in reason for reason in results["reasons"])
    assert "final.jsonl is missing" in capsys.readouterr().out


def test_an_incomplete_final_read_makes_anomalies_there_not_conclusive(tmp_path):
    run_dir = lost_write_run(tmp_path / "run", complete=False)
    assert main(["check", str(run_dir)]) == 2
    results = results_of(run_dir)
    assert results["valid"] == "unknown"
    assert any("incomplete" in reason for reason in results["reasons"])


def test_a_corrupt_middle_line_is_an_error_a_torn_last_line_a_warning_both_unknown(tmp_path):
    middle = valid_run(tmp_path / "middle")
    lines = (middle / "history.jsonl").read_bytes().splitlines(keepends=True)
    lines.insert(3, b'{"index": 3, "time": 1, "process": 4, "type": "okk", "f": "poll"}\n')
    renumbered = [orjson.dumps({**orjson.loads(line), "index": i}) + b"\n"
                  for i, line in enumerate(lines)]
    (middle / "history.jsonl").write_bytes(b"".join(renumbered))
    assert main(["check", str(middle)]) == 2
    results = results_of(middle)
    assert len(results["errors"]) == 1 and 'history.jsonl:4: field "type"' in results["errors"][0]
    assert any("error(s) in the input files" in reason for reason in results["reasons"])

    last = valid_run(tmp_path / "last")
    with open(last / "history.jsonl", "ab") as f:
        f.write(b'{"index": 10, "time": 5, "proc')
    assert main(["check", str(last)]) == 2  # the torn op's effect is unknown: never valid
    results = results_of(last)
    assert results["valid"] == "unknown" and results["errors"] == []
    assert len(results["warnings"]) == 1 and "the last line is ignored" in results["warnings"][0]
    assert any("torn" in reason for reason in results["reasons"])


def test_an_anomaly_found_beside_a_corrupt_line_is_not_conclusive(tmp_path):
    """A line that cannot be read can itself make an anomaly (here the final read
    loses a line: its send reads as a lost write), so errors make the run unknown."""
    run_dir = lost_write_run(tmp_path / "run")
    assert main(["check", str(run_dir)]) == 1
    final = (run_dir / "final.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "final.jsonl").write_bytes(b"".join([b"{not json\n", *final]))
    assert main(["check", str(run_dir)]) == 2
    results = results_of(run_dir)
    assert results["valid"] == "unknown" and results["anomaly_counts"].get("lost-write")
    assert results["not_conclusive"].get("lost-write") and "final.jsonl:1" in results["errors"][0]
    assert any("errors in the input files" in reason and "not conclusive" in reason for reason in results["reasons"])


def test_the_invalid_set_of_test_json_is_applied(tmp_path):
    run_dir = lost_write_run(tmp_path / "run")
    (run_dir / "test.json").write_bytes(orjson.dumps({"checker": {"invalid": ["duplicate"],
                                                                  "linearizability": False}}))
    assert main(["check", str(run_dir)]) == 0
    results = results_of(run_dir)
    assert results["anomaly_counts"]["lost-write"] == 1 and results["valid"] is True
    assert results["invalid_anomalies"] == ["duplicate"]


def test_no_write_leaves_the_run_directory_alone(tmp_path, capsys):
    run_dir = valid_run(tmp_path / "run")
    assert main(["check", "--no-write", str(run_dir)]) == 0
    assert not (run_dir / "results.json").exists()
    assert "verdict: VALID" in capsys.readouterr().out


def test_an_unwritable_results_file_exits_254_with_what_to_do(tmp_path, capsys):
    run_dir = valid_run(tmp_path / "run")
    (run_dir / "results.json").mkdir()
    (run_dir / "results.json" / "in-the-way").write_text("x")
    assert main(["check", str(run_dir)]) == 254
    err = capsys.readouterr().err
    assert f"cannot write {run_dir / 'results.json'}" in err and "--no-write" in err


def test_not_a_run_directory_exits_254_saying_what_one_holds(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 254
    err = capsys.readouterr().err
    assert f"{tmp_path} is not a run directory" in err and "history.jsonl" in err


@pytest.mark.parametrize("argv", [["check", "--bogus", "x"], ["check"], ["frobnicate"], [],
                                  ["export", "somewhere"]])
def test_bad_arguments_exit_254(argv, tmp_path, capsys):
    assert main(argv) == 254
    assert capsys.readouterr().err


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "check" in capsys.readouterr().out


def test_a_crash_exits_255_with_the_traceback(tmp_path, capsys, monkeypatch):
    def broken(ph, options, *args):
        raise ZeroDivisionError("checker bug")

    monkeypatch.setattr(checking, "check_partition", broken)
    assert main(["check", str(valid_run(tmp_path / "run"))]) == 255
    err = capsys.readouterr().err
    assert "fencepost crashed: ZeroDivisionError: checker bug" in err
    assert "Traceback (most recent call last)" in err


@pytest.mark.integration
def test_the_console_script_returns_the_exit_code(tmp_path):
    run_dir = lost_write_run(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", "import sys; from fencepost.harness.cli import main; "
                           "sys.exit(main())", "check", str(run_dir)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "lost-write" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "check", "--nope", "x"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 254 and "unrecognized arguments" in bad.stderr


def test_check_run_returns_the_outcome_and_prints_to_the_current_stdout(tmp_path, capsys):
    run_dir = lost_write_run(tmp_path / "run")
    outcome = checking.check_run(run_dir, write=False, out=None)
    assert (outcome.valid, outcome.exit_code) == (False, 1)
    assert outcome.results["anomaly_counts"]["lost-write"] == 1
    assert not (run_dir / "results.json").exists()
    assert capsys.readouterr().out == ""
    checking.check_run(run_dir, write=False)
    assert "verdict: INVALID" in capsys.readouterr().out


def test_a_history_without_client_ops_is_unknown(tmp_path):
    h = History()
    h.add("nemesis", "info", "kill", {"nodes": ["n1"]})
    run_dir = write_run(tmp_path / "run", h, final=[])
    assert main(["check", str(run_dir)]) == 2
    assert any("no send or poll" in reason for reason in results_of(run_dir)["reasons"])
