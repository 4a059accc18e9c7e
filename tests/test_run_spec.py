"""The run's test spec (TOML + flags), the results store and the progress line: pure parts."""
from __future__ import annotations

import io
import os

import pytest

from harness.errors import BadInput
from harness.run.progress import Progress, Status
from harness.run.spec import build_spec, load_toml
from harness.run.store import new_run_dir


def test_defaults_are_the_main_job():
    spec = build_spec({}, {})
    assert (spec.system, spec.nodes, spec.truncation, spec.time_limit, spec.rate) == ("own", 3, "kip320", 60.0, 500.0)
    assert (spec.topic.partitions, spec.topic.replication_factor, spec.topic.min_insync_replicas) == (3, 3, 2)
    if os.geteuid() == 0:
        assert spec.backend == "netns" and spec.faults == "kill,pause,partition" and spec.notes == ()


def test_flags_override_the_file_and_sections_take_dotted_keys(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('name = "mine"\ntime_limit = 30\n[nemesis]\nfaults = "kill"\ninterval = 5\n'
                    '[producer]\nidempotent = true\nretries = 3\n[checker]\ninvalid = ["lost-write"]\n')
    spec = build_spec(load_toml(path), {"time_limit": 12, "nemesis.faults": "pause", "seed": None})
    assert (spec.name, spec.time_limit, spec.nemesis.faults, spec.nemesis.interval) == ("mine", 12.0, "pause", 5.0)
    assert spec.producer.idempotent and spec.producer.retries == 3
    assert spec.to_json()["checker"] == {"invalid": ["lost-write"]}
    assert spec.to_json()["producer"]["idempotent"] is True  # what the checker reads from test.json


def test_power_cut_chooses_lazy_flush_unless_told_otherwise():
    assert build_spec({"nemesis": {"faults": "power-cut"}}, {}).flush == "lazy"
    assert build_spec({"nemesis": {"faults": "kill"}}, {}).flush == "os"


def test_a_scripted_nemesis_keeps_its_steps():
    spec = build_spec({"nemesis": {"schedule": "scripted",
                                   "script": [{"at": 0, "action": "start kill"}, {"at": 5, "action": "heal"}]}}, {})
    assert spec.to_json()["nemesis"]["script"] == [{"at": 0, "action": "start kill"}, {"at": 5, "action": "heal"}]


@pytest.mark.parametrize("config, fragment", [
    ({"rate": "fast"}, "rate = 'fast': give a number"),
    ({"colour": "red"}, "unknown setting colour"),
    ({"producer": {"retriez": 1}}, "unknown setting producer.retriez"),
    ({"topic": {"replication_factor": 4}}, "topic.replication_factor = 4: give 1..3"),
    ({"topic": {"min_insync_replicas": 3, "replication_factor": 2}}, "topic.min_insync_replicas = 3"),
    ({"nemesis": [1]}, "[nemesis] must be a table"),
    ({"nemesis": {"schedule": "scripted"}}, "needs [[nemesis.script]]"),
    ({"nemesis": {"schedule": "weekly"}}, "nemesis.schedule = 'weekly'"),
    ({"truncation": "kip999"}, "truncation = 'kip999'"),
    ({"backend": "vm"}, "backend = 'vm'"),
    ({"time_limit": 0}, "time_limit = 0"),
    ({"concurrency": 1.5}, "concurrency = 1.5: give a whole number"),
    ({"producer": {"idempotent": True, "retries": 0}}, "needs producer.retries >= 1"),
    ({"producer": {"idempotent": "yes"}}, "producer.idempotent = 'yes': give true or false"),
    ({"name": "../escape"}, "a test name is a folder name"),
    ({"timeouts": {"quiesce": -1}}, "timeouts.quiesce = -1"),
    ({"notes": ["x"]}, "written by fencepost"),
    ({"backend": "netns", "backend_options": {"subnet": "bogus"}}, "subnet 'bogus' is not an IPv4 network"),
    ({"backend": "netns", "backend_options": {"subnet": "10.1.2.0/30"}}, "choose a larger subnet"),
    ({"backend": "netns", "backend_options": {"subnet": 10}}, "subnet = 10: give an IPv4 network"),
])
def test_every_bad_value_is_named(config, fragment):
    with pytest.raises(BadInput) as raised:
        build_spec(config, {})
    assert fragment in str(raised.value)


def test_a_bad_toml_file_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("time_limit = = 3\n")
    with pytest.raises(BadInput, match="not valid TOML"):
        load_toml(path)
    with pytest.raises(BadInput, match="no such file"):
        load_toml(tmp_path / "missing.toml")


def test_run_dirs_are_fresh_and_latest_points_at_the_newest(tmp_path):
    first = new_run_dir(tmp_path, "t")
    second = new_run_dir(tmp_path, "t")
    assert first != second and first.parent == second.parent == tmp_path / "t"
    assert (tmp_path / "latest").resolve() == second.resolve()
    assert (tmp_path / "t" / "latest").resolve() == second.resolve()
    assert not os.path.isabs(os.readlink(tmp_path / "latest"))


def test_progress_is_one_line_per_phase_when_not_a_terminal():
    out = io.StringIO()
    progress = Progress(out, live=False)
    progress.phase("setup")
    progress.show(Status("main", 3, 60, ok=5))
    progress.show(Status("main", 4, 60, ok=9))
    progress.phase("check")
    assert out.getvalue().splitlines() == ["fencepost: setup", "fencepost: main", "fencepost: check"]


def test_progress_redraws_one_line_on_a_terminal():
    out = io.StringIO()
    progress = Progress(out, live=True)
    progress.show(Status("main", 3, 60, ok=5, fail=1, info=2, ops_per_s=480, faults=("kill",)))
    text = out.getvalue()
    assert text.startswith("\r") and "\n" not in text
    assert "ok 5  fail 1  info 2" in text and "480 ops/s" in text and "faults: kill" in text
