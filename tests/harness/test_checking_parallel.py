"""`fencepost check --jobs N`: a run loaded in a forked process and its
partitions checked in workers forked from that one give the same results.json
as one process; a worker's crash is a harness crash, with its traceback; bad
input found in the loading process is the same usage error as in one."""
from __future__ import annotations

import pytest

from fencepost.harness.check import checking
from fencepost.harness.check.checking import check_run
from fencepost.harness.cli import main
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import plant

pytestmark = pytest.mark.integration


@pytest.fixture
def always_fork(monkeypatch):
    # Small runs are checked in one process (a fork costs more than it saves);
    # these tests want the workers, forked by a process that loads the run.
    monkeypatch.setattr(checking, "FORK_MIN_OPS", 0)
    monkeypatch.setattr(checking, "LOADER_MIN_BYTES", 0)


def planted_run(tmp_path, name: str, seed: int):
    run = plant(name, generate(GenConfig(seed=seed, lines=3_000, idempotent=True)), seed).run
    return run.write(tmp_path / f"{name.replace('/', '-')}-{seed}")


def comparable(results: dict) -> dict:
    return {k: v for k, v in results.items() if k != "checked"} | {
        "ops": results["checked"]["ops"], "partitions": results["checked"]["partitions"]}


@pytest.mark.parametrize("name,seed", [("lost-write/overwritten", 1), ("duplicate", 2), ("poll-skip", 3),
                                       ("replica-divergence", 4), ("unseen", 5)])
def test_workers_give_the_same_results_as_one_process(tmp_path, always_fork, name, seed):
    run_dir = planted_run(tmp_path, name, seed)
    alone = check_run(run_dir, write=False, out=None, jobs=1)
    forked = check_run(run_dir, write=False, out=None, jobs=2)
    assert comparable(forked.results) == comparable(alone.results)
    assert forked.exit_code == alone.exit_code


def test_a_checker_crash_in_a_worker_exits_255_with_its_traceback(tmp_path, always_fork,
                                                                   monkeypatch, capsys):
    def broken(ph, options, *args, **kwargs):
        raise RuntimeError(f"checker bug on {ph.topic}/{ph.partition}")

    monkeypatch.setattr(checking, "check_partition", broken)
    run_dir = planted_run(tmp_path, "lost-write/missing", 1)
    assert main(["check", str(run_dir), "--jobs", "2"]) == 255
    err = capsys.readouterr().err
    assert "checker bug on fp/" in err and "RuntimeError" in err


def test_a_bad_jobs_value_is_a_usage_error(tmp_path):
    run_dir = planted_run(tmp_path, "lost-write/missing", 1)
    assert main(["check", str(run_dir), "--jobs", "0"]) == 254


def test_bad_input_found_by_the_loading_process_is_a_usage_error(tmp_path, always_fork, capsys):
    run_dir = planted_run(tmp_path, "lost-write/missing", 1)
    (run_dir / "test.json").write_text('{"checker": {"search_budget": 0}}')
    assert main(["check", str(run_dir), "--jobs", "2"]) == 254
    assert "search_budget" in capsys.readouterr().err


@pytest.mark.parametrize("reader", ["native", "python"])
def test_the_loading_process_sends_the_header_and_keeps_what_it_loaded(tmp_path, always_fork, reader,
                                                                      monkeypatch):
    # Run here (not forked), to look at both: what goes back is what the verdict
    # reads; what was loaded stays referenced until the process exits.
    from fencepost.harness.check import native_load
    from fencepost.harness.check.loading import load_run
    from fencepost.harness.rundir.final_reader import FinalState

    if reader == "python":
        monkeypatch.setattr(native_load, "available", lambda: False)
    elif not native_load.available():
        pytest.skip("the C reader was not compiled")
    run_dir = planted_run(tmp_path, "lost-write/missing", 1)
    whole = load_run(run_dir)
    loader = checking._Loader()
    run, reports = loader(run_dir, 2)
    assert run.partitions == {} and run.builder is None  # the tables stay in the loading process
    assert run.keys() == list(whole.partitions) == [(r.topic, r.partition) for r in reports]
    assert run.finals == whole.finals == {
        key: FinalState(ph.final is not None, ph.final_complete) for key, ph in whole.partitions.items()}
    kept = loader.run
    if reader == "native":  # the partitions were built by the workers; the tables stay here
        assert kept.partitions == {} and kept.builder is not None
        assert [kept.partition(key) for key in run.keys()] == list(whole.partitions.values())
    else:
        assert kept.partitions == whole.partitions
        assert all(ph.sends and ph.final for ph in kept.partitions.values())


@pytest.mark.parametrize("name,seed", [("unseen", 5), ("lost-write/missing", 6)])
def test_a_check_told_what_it_keeps_gives_the_compacted_report(tmp_path, name, seed):
    from fencepost.checkers.check import check_partition
    from fencepost.harness.check.loading import load_run

    run = load_run(planted_run(tmp_path, name, seed))
    keep = 2
    unseen = 0
    for ph in run.partitions.values():
        whole = checking.compact(check_partition(ph, run.options), keep)
        told = checking.compact(check_partition(ph, run.options, keep), keep)
        assert told.anomalies == whole.anomalies and told.stats == whole.stats
        unseen += whole.stats["unseen"]
    assert unseen > keep  # some partition had anomalies past those kept
