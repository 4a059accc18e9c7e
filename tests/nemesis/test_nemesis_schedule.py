"""Fault spec parsing and schedules, pure: errors name the bad part and the valid names;
fixed and random schedules follow their rhythm and repeat for a seed; scripts run in
order of their offsets; random faults overlap and draw their targets."""
from __future__ import annotations

import itertools
import random

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.nemesis.schedule import FixedSchedule, RandomSchedule, ScriptedSchedule, Step, make_schedule
from fencepost.nemesis.spec import DRAWN_TARGETS, FAULT_KINDS, FaultSpec, parse_fault, parse_faults


def test_a_composition_parses_in_order_with_default_targets():
    assert parse_faults(" kill, pause ,partition:majorities-ring,leader-bounce,zombie:2 ") == (
        FaultSpec("kill", "one"), FaultSpec("pause", "one"), FaultSpec("partition", "majorities-ring"),
        FaultSpec("leader-bounce", "random"), FaultSpec("zombie", "2"))
    assert str(parse_fault("power-cut:all")) == "power-cut:all"
    assert parse_fault("zombie:007").target == "7"


@pytest.mark.parametrize("text, named, listed", [
    ("kill,explode", "'explode'", ", ".join(FAULT_KINDS)),
    ("partition:ring", "'ring' for partition", "one, minority, majority, majorities-ring, bridge, leader, "
                                               "controller"),
    ("pause:majorities-ring", "'majorities-ring' for pause", "one, minority, majority, all, leader, controller"),
    ("kill,,pause", "empty part", "kill,pause,partition:majorities-ring"),
    ("", "no fault given", ", ".join(FAULT_KINDS)),
    ("zombie:first", "zombie:first", "partition number"),
])
def test_bad_specs_name_the_bad_part_and_the_valid_names(text, named, listed):
    with pytest.raises(ClusterConfigError) as caught:
        parse_faults(text)
    assert named in str(caught.value) and listed in str(caught.value)


def test_a_bad_part_is_named_inside_the_whole_spec():
    with pytest.raises(ClusterConfigError, match=r"'kil' in 'pause,kil'"):
        parse_faults("pause,kil")


def take(schedule, n: int, seed: int = 0) -> list[Step]:
    return list(itertools.islice(schedule.steps(random.Random(seed)), n))


def test_fixed_schedule_start_hold_stop_quiet_in_the_given_order():
    specs = parse_faults("kill,pause")
    steps = take(FixedSchedule(specs, 2.5), 8)
    assert [(s.action, str(s.fault), s.wait) for s in steps] == [
        ("start", "kill:one", 0.0), ("stop", "kill:one", 2.5), ("start", "pause:one", 2.5),
        ("stop", "pause:one", 2.5), ("start", "kill:one", 2.5), ("stop", "kill:one", 2.5),
        ("start", "pause:one", 2.5), ("stop", "pause:one", 2.5)]
    assert all(s.at is None for s in steps)


def test_a_scenario_in_a_schedule_has_no_hold_and_no_stop():
    steps = take(FixedSchedule(parse_faults("leader-bounce,kill"), 1), 5)
    assert [(s.action, s.fault.name, s.wait) for s in steps] == [
        ("start", "leader-bounce", 0.0), ("start", "kill", 1.0), ("stop", "kill", 1.0),
        ("start", "leader-bounce", 1.0), ("start", "kill", 1.0)]


def lane_events(steps: list[Step]) -> dict[str, list[tuple[str, float]]]:
    lanes: dict[str, list[tuple[str, float]]] = {}
    for step in steps:
        lanes.setdefault(step.fault.name, []).append((step.action, step.at))
    return lanes


def test_random_schedule_repeats_for_a_seed_differs_across_seeds_and_keeps_each_lane_around_the_mean():
    schedule = RandomSchedule(parse_faults("kill,pause,partition"), mean=10)
    one, again, other = take(schedule, 90, seed=7), take(schedule, 90, seed=7), take(schedule, 90, seed=8)
    assert one == again and one != other
    ats = [s.at for s in one]
    assert all(a is not None for a in ats) and ats == sorted(ats)
    lanes = lane_events(one)
    assert sorted(lanes) == ["kill", "partition", "pause"]
    for name, events in lanes.items():
        assert [a for a, _ in events] == ["start", "stop"] * (len(events) // 2) + ["start"] * (len(events) % 2)
        assert 0 <= events[0][1] <= 10, name  # lanes start staggered within the first mean
        gaps = [later - earlier for (_, earlier), (_, later) in zip(events, events[1:])]
        assert all(5 <= g <= 15 for g in gaps), (name, gaps)  # every hold and quiet
        assert len(set(gaps)) == len(gaps)


def test_random_faults_overlap():
    active: set[str] = set()
    most = 0
    for step in take(RandomSchedule(parse_faults("kill,pause,partition"), mean=5), 200, seed=3):
        (active.add if step.action == "start" else active.discard)(step.fault.name)
        most = max(most, len(active))
    assert most == 3


def test_a_fault_without_a_target_gets_one_drawn_at_each_start_an_explicit_one_is_kept():
    steps = take(RandomSchedule(parse_faults("kill,partition:bridge"), mean=5), 400, seed=1)
    kills = {s.fault.target for s in steps if s.action == "start" and s.fault.name == "kill"}
    assert kills == set(DRAWN_TARGETS["kill"]) and "controller" not in kills
    assert {s.fault.target for s in steps if s.action == "start" and s.fault.name == "partition"} == {"bridge"}


def test_specs_of_one_name_share_a_lane_never_two_at_once_and_scenarios_only_start():
    steps = take(RandomSchedule(parse_faults("kill:leader,kill:one,leader-bounce"), mean=4), 200, seed=5)
    kills = [s for s in steps if s.fault.name == "kill"]
    assert [s.action for s in kills] == ["start", "stop"] * (len(kills) // 2) + ["start"] * (len(kills) % 2)
    assert {s.fault.target for s in kills if s.action == "start"} == {"leader", "one"}
    bounces = [s for s in steps if s.fault.name == "leader-bounce"]
    assert bounces and all(s.action == "start" for s in bounces)
    assert all(2 <= b.at - a.at <= 6 for a, b in zip(bounces, bounces[1:]))


def test_fitted_leaves_out_drawn_targets_the_cluster_cannot_take_never_explicit_ones():
    schedule = RandomSchedule(parse_faults("kill,pause:minority"), mean=5)
    fitted = schedule.fitted(lambda spec: spec.target not in ("minority", "all"))
    assert {str(f) for f in fitted.faults} == {"kill:one", "kill:majority", "kill:leader", "pause:minority"}
    assert {str(f) for f in schedule.fitted(lambda spec: False).faults} == {"kill:one", "pause:minority"}
    assert FixedSchedule(parse_faults("kill"), 1).fitted(lambda spec: False).faults == (FaultSpec("kill", "one"),)


def test_scripted_schedule_runs_in_order_of_offsets_keeping_the_given_order_for_ties():
    schedule = ScriptedSchedule.from_data([
        {"at": 10, "action": "stop partition"},
        [0, "start partition:bridge"],
        {"at": 5, "action": "start kill:leader"},
        {"at": 5, "action": "start pause"},
        (12.5, "stop"),
        {"at": 20, "action": "heal"},
        {"at": 20, "action": "start zombie:1"},
    ])
    assert [s.describe() for s in schedule.steps(random.Random(0))] == [
        "start partition:bridge at 0s", "start kill:leader at 5s", "start pause:one at 5s",
        "stop partition at 10s", "stop at 12.5s", "heal at 20s", "start zombie:1 at 20s"]
    assert [str(f) for f in schedule.faults] == ["partition:bridge", "kill:leader", "pause:one", "zombie:1"]


@pytest.mark.parametrize("entry, message", [
    ({"at": 1}, "exactly the keys at and action"),
    ({"at": 1, "action": "start kill", "when": 2}, "exactly the keys at and action"),
    ({"at": -1, "action": "heal"}, "at -1 is not a number of seconds"),
    ({"at": "soon", "action": "heal"}, "at 'soon'"),
    ([1, "explode"], "unknown action 'explode'"),
    ([1, "start kil"], "unknown fault 'kil'"),
    ([1, "stop kil"], "unknown fault 'kil'"),
    ([1, "stop zombie"], "zombie is a scenario"),
    ([1, "start partition:ring"], "unknown target 'ring'"),
    ("heal", "write {at = SECONDS, action = ACTION}"),
])
def test_bad_script_entries_are_named_with_their_index(entry, message):
    with pytest.raises(ClusterConfigError) as caught:
        ScriptedSchedule.from_data([[0, "start kill"], entry])
    assert "nemesis script entry 1" in str(caught.value) and message in str(caught.value)


def test_make_schedule_by_name_and_its_refusals():
    assert make_schedule("fixed", "kill", 3) == FixedSchedule((FaultSpec("kill", "one"),), 3.0)
    assert make_schedule("random", "pause:one", 4).faults == (FaultSpec("pause", "one"),)
    assert len(make_schedule("random", "pause", 4).faults) == len(DRAWN_TARGETS["pause"])
    assert len(make_schedule("scripted", script=[[0, "start kill"]]).script) == 1
    with pytest.raises(ClusterConfigError, match="fixed, random, scripted"):
        make_schedule("sometimes", "kill")
    with pytest.raises(ClusterConfigError, match="needs a script"):
        make_schedule("scripted")
    with pytest.raises(ClusterConfigError, match="interval 0"):
        make_schedule("fixed", "kill", 0)
    with pytest.raises(ClusterConfigError, match="at least one fault"):
        FixedSchedule((), 1)
    with pytest.raises(ClusterConfigError, match="a list of entries"):
        ScriptedSchedule.from_data({"at": 0, "action": "heal"})
