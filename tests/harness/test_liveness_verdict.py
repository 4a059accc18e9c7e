"""The liveness verdict (harness/check/liveness.py) on planted histories: a partition that stops
acknowledging writes with no fault to explain it is `unavailable`, the same gap inside a
fault band (or its grace) is not; recovery after the final heal is timed per partition and
its absence is `no-recovery`, while a run recorded before there was a recovery phase is not
judged; a consumer left behind after the heal is `stuck-consumer`, one that caught up is not;
a clean history has no finding; and none of it changes the safety verdict."""
from __future__ import annotations

import orjson

from fencepost.harness.check.checking import check_run
from fencepost.harness.check.liveness import Thresholds, liveness
from tests.support.liveness_support import History, poll, steady


def test_a_clean_history_has_no_liveness_finding(tmp_path):
    h = History()
    steady(h, 1, 60, partitions=(0, 1, 2))
    section = liveness(h.write(tmp_path / "run"), {})
    assert section["verdict"] == "ok" and section["findings"] == 0
    assert section["unavailable"] == [] and section["recovery"] is None and section["stuck_consumers"] == []


def test_a_partition_without_acks_and_no_fault_to_explain_it_is_unavailable(tmp_path):
    h = History()
    steady(h, 1, 60, partitions=(0, 1), gap=(1, 20, 40))
    section = liveness(h.write(tmp_path / "run"), {})
    assert section["verdict"] == "failed" and section["kinds"]["unavailable"] == 1
    (window,) = section["unavailable"]
    assert window["partition"] == "fp-1" and 19 <= window["from_s"] <= 20 and 40 <= window["to_s"] <= 41
    assert window["unexplained"] == [window["from_s"], window["to_s"]]


def test_a_gap_inside_a_fault_or_its_grace_is_explained(tmp_path):
    h = History()
    steady(h, 1, 60, partitions=(0, 1), gap=(1, 20, 40))
    h.nemesis(18, "kill", {"target": "one", "nodes": ["n2"]})
    h.nemesis(30, "start", {"nodes": ["n2"]})  # the band ends at 30.1; its grace (15 s) covers up to 45
    section = liveness(h.write(tmp_path / "run"), {})
    assert section["kinds"]["unavailable"] == 0, section["unavailable"]
    # with a grace of 5 s, 35.1 .. 40.x is 5 s: below the 10 s threshold; a 2 s threshold catches it
    strict = liveness(tmp_path / "run", {}, Thresholds(unavailable_s=2, grace_s=5))
    (window,) = strict["unavailable"]
    assert window["partition"] == "fp-1" and abs(window["unexplained"][0] - 35.1) < 0.01


def test_recovery_after_the_final_heal_per_partition(tmp_path):
    h = History()
    steady(h, 1, 40, partitions=(0, 1))
    h.nemesis(40, "heal", None, took=0.5)  # the final heal ends at 40.5
    h.send(41.0, 1, 0, "1-900", 100)  # fp-0 recovers 0.5 s after the heal
    h.send(41.0, 2, 1, "2-900", None, took=5)  # fp-1: sent, never acknowledged
    section = liveness(h.write(tmp_path / "run"), {})
    assert section["recovery"]["healed_at_s"] == 40.5
    assert section["recovery"]["partitions"] == {"fp-0": 0.51, "fp-1": None}
    assert section["kinds"]["no-recovery"] == 1 and section["verdict"] == "failed"


def test_a_run_recorded_before_the_recovery_phase_is_not_judged_on_it(tmp_path):
    h = History()
    steady(h, 1, 40, partitions=(0, 1))
    h.nemesis(40, "heal", None)
    section = liveness(h.write(tmp_path / "run"), {})
    assert section["recovery"]["partitions"] == {} and section["verdict"] == "ok"


def test_a_consumer_left_behind_after_the_heal_is_stuck_one_that_caught_up_is_not(tmp_path):
    h = History()
    steady(h, 1, 50, partitions=(0,))  # offsets 0..97, one every 0.5 s, process n sends n-0
    for process in (100000, 100001):
        h.add(0.5, process, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
        h.add(0.6, process, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    poll(h, 5, 100000, [(0, 0, "0-0")])  # it reads the first record and then nothing more
    poll(h, 5, 100001, [(0, o, f"{o}-0") for o in range(8)])
    h.nemesis(45, "heal", None, took=0.2)
    poll(h, 50, 100000, [])  # after the heal: still at offset 0, about 49 s behind
    poll(h, 50, 100001, [(0, o, f"{o}-0") for o in range(8, 98)])
    section = liveness(h.write(tmp_path / "run"), {})
    (stuck,) = section["stuck_consumers"]
    assert stuck["process"] == 100000 and stuck["lag_s"] > 45 and section["kinds"]["stuck-consumer"] == 1


def test_liveness_never_changes_the_safety_verdict(tmp_path):
    h = History()
    steady(h, 1, 60, partitions=(0,), gap=(0, 10, 40))
    run = h.write(tmp_path / "run")
    final = [{"kind": "read", "topic": "fp", "partition": 0, "offset": line["value"]["offset"],
              "value": line["value"]["value"], "leader_epoch": 0}
             for line in h.lines if line["f"] == "send" and line["type"] == "ok"]
    final.append({"kind": "read-state", "topic": "fp", "partition": 0, "complete": True,
                  "end_offset": len(final)})
    (run / "final.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in final))
    outcome = check_run(run, write=True, out=None)
    assert outcome.valid is True and outcome.exit_code == 0
    assert outcome.results["liveness"]["verdict"] == "failed"
    assert orjson.loads((run / "results.json").read_bytes())["liveness"]["kinds"]["unavailable"] == 1


def test_the_report_shows_the_liveness_verdict_and_its_findings(tmp_path):
    from fencepost.harness.report import write_report

    h = History()
    steady(h, 1, 60, partitions=(0, 1), gap=(1, 20, 40))
    run = h.write(tmp_path / "run")
    check_run(run, write=True, out=None)
    page = write_report(run).read_text()
    section = page[page.index('id="liveness-section"'):page.index('id="plots-section"')]
    assert 'data-liveness="failed"' in section and "FAILED" in section
    assert "never part of the verdict above" in section
    assert "fp-1: no write acknowledged from" in section and "no fault explains it" in section
    assert 'href="#liveness-section"' in page


def test_a_consumer_that_just_started_over_is_behind_not_stuck(tmp_path):
    """A consumer that caught up and then started over from the beginning shortly before the
    end is far behind at its last poll, but it has not had `stuck_lag_s` to catch up again."""
    h = History()
    steady(h, 1, 30, partitions=(0,))  # offsets 0..57, one every 0.5 s
    h.add(0.5, 100000, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    h.add(0.6, 100000, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    for t in range(2, 28):  # keeps up: reads everything acknowledged so far
        poll(h, t, 100000, [(0, o, f"{o}-0") for o in range(2 * (t - 1) - 2, 2 * (t - 1))])
    h.add(28.0, 100000, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    h.add(28.1, 100000, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    poll(h, 29, 100000, [(0, 0, "0-0")])  # about 27 s behind, 1 s after starting over
    section = liveness(h.write(tmp_path / "run"), {})
    assert section["stuck_consumers"] == [] and section["kinds"]["stuck-consumer"] == 0
    # the same consumer still that far behind 12 s later is stuck
    h2 = History()
    steady(h2, 1, 45, partitions=(0,))
    h2.add(0.5, 100000, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    h2.add(0.6, 100000, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    for t in range(2, 28):
        poll(h2, t, 100000, [(0, o, f"{o}-0") for o in range(2 * (t - 1) - 2, 2 * (t - 1))])
    h2.add(28.0, 100000, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    h2.add(28.1, 100000, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
    for t in (29, 35, 41):
        poll(h2, t, 100000, [(0, 0, "0-0")] if t == 29 else [])
    (stuck,) = liveness(h2.write(tmp_path / "run2"), {})["stuck_consumers"]
    assert stuck["process"] == 100000 and stuck["behind_since_s"] <= 28 and stuck["lag_s"] > 30
