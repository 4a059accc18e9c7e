"""The run's test spec (TOML + flags), the results store and the progress line: pure parts."""
from __future__ import annotations

import io
import os
import re
import time
from datetime import datetime, timedelta, timezone

import pytest

from fencepost.harness.errors import BadInput
from fencepost.harness.run.progress import Progress, Status
from fencepost.harness.run.spec import build_spec, load_toml
from fencepost.harness.rundir.run_dirs import close_logger, format_time, new_run_dir, run_logger, run_stamp, run_started


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
    ({"name": "../escape"}, "name = '../escape': a name is printable"),
    ({"timeouts": {"quiesce": -1}}, "timeouts.quiesce = -1"),
    ({"notes": ["x"]}, "written by fencepost"),
    ({"backend": "netns", "backend_options": {"subnet": "bogus"}}, "subnet 'bogus' is not an IPv4 network"),
    ({"backend": "netns", "backend_options": {"subnet": "10.1.2.0/30"}}, "choose a larger subnet"),
    ({"backend": "netns", "backend_options": {"subnet": 10}}, "subnet = 10: give an IPv4 network"),
    ({"backend": "process", "nemesis": {"faults": "kill,partition:one"}},
     "partition:one cut the network, which the process backend cannot"),
    ({"backend": "process", "nemesis": {"faults": "zombie"}}, "use --backend netns as root"),
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


def test_progress_without_a_terminal_beats_a_status_line_in_the_main_phase():
    out = io.StringIO()
    progress = Progress(out, live=False, heartbeat_s=0.2)
    progress.phase("setup")
    progress.start(lambda: Status("main", 12, 60, ok=300, fail=1, ops_per_s=490, faults=("kill:one",)))
    time.sleep(1.1)
    progress.stop()
    progress.phase("heal")
    lines = out.getvalue().splitlines()
    beats = [line for line in lines if "ok 300" in line]
    assert lines[:2] == ["fencepost: setup", "fencepost: main"] and lines[-1] == "fencepost: heal"
    assert 3 <= len(beats) <= 6 and all(line.startswith("fencepost: main") and "faults: kill:one" in line
                                        for line in beats)
    quiet = io.StringIO()
    progress = Progress(quiet, live=False)  # the default: every 30 s, so none in a second
    progress.start(lambda: Status("main", 1, 60))
    time.sleep(0.6)
    progress.stop()
    assert quiet.getvalue().splitlines() == ["fencepost: main"]


def test_progress_redraws_one_line_on_a_terminal():
    out = io.StringIO()
    progress = Progress(out, live=True)
    progress.show(Status("main", 3, 60, ok=5, fail=1, info=2, ops_per_s=480, faults=("kill",)))
    text = out.getvalue()
    assert text.startswith("\r") and "\n" not in text
    assert "ok 5  fail 1  info 2" in text and "480 ops/s" in text and "faults: kill" in text


def test_run_directory_names_carry_the_utc_offset_and_older_names_still_read():
    utc = datetime(2026, 11, 25, 21, 0, 0, tzinfo=timezone.utc)
    plus_one = utc.astimezone(timezone(timedelta(hours=1)))
    assert run_stamp(utc).endswith("Z") and run_stamp(utc).startswith("2026112") and len(run_stamp(utc)) == 16
    assert run_started(f"{run_stamp(utc)}-abc123") == utc
    assert run_started("20261125T220000+0100-abc123") == plus_one == utc
    assert run_started("20261125T160000-0500-0a1b2c") == utc
    old = run_started("20261125T210000-123456")  # before offsets: this machine's local time
    assert old == datetime(2026, 11, 25, 21, 0, 0).astimezone() and old.tzinfo is not None
    for name in ("latest", "20261125T210000", "20261325T210000Z-abc123", "20261125T210000Z-abc12"):
        assert run_started(name) is None, name
    assert format_time(utc) == "2026-11-25 21:00:00 UTC"
    assert format_time(plus_one) == "2026-11-25 22:00:00 +01:00"


def test_a_new_run_directory_and_its_log_say_their_utc_offset(tmp_path):
    run_dir = new_run_dir(tmp_path, "t")
    assert re.fullmatch(r"\d{8}T\d{6}(Z|[+-]\d{4})-[0-9a-f]{6}", run_dir.name), run_dir.name
    assert abs((run_started(run_dir.name) - datetime.now().astimezone()).total_seconds()) < 60
    log = run_logger(run_dir)
    log.info("hello")
    close_logger(log)
    line = (run_dir / "fencepost.log").read_text().strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} INFO hello", line), line


def test_fencepost_log_says_the_verdict_in_words():
    from pathlib import Path

    from fencepost.harness.check.checking import CheckOutcome
    from fencepost.harness.run.runner import RunOutcome, verdict_line

    invalid = RunOutcome(Path("r"), CheckOutcome(False, {"anomaly_counts": {"lost-write": 3, "duplicate": 0}}, 1),
                         None, timings={"run to first op": 1.666}, problems=[])
    assert verdict_line(invalid) == ("verdict: invalid (lost-write 3); timings: run to first op 1.7 s; "
                                     "problems: none")
    unknown = RunOutcome(Path("r"), CheckOutcome("unknown", {}, 2), None, problems=["quiesce: timed out"])
    assert verdict_line(unknown) == "verdict: unknown; timings: none; problems: quiesce: timed out"
    assert verdict_line(RunOutcome(Path("r"), CheckOutcome(True, {}, 0), None)).startswith("verdict: valid;")
    assert "False" not in verdict_line(invalid) and "{" not in verdict_line(invalid)


def test_the_netns_tools_in_sbin_but_off_path_are_named_with_the_fix(monkeypatch):
    """A user's PATH kept through sudo (a CI workflow keeping its Python) lacks /usr/sbin on Debian:
    the netns backend is not available then, and the reason says where the tools are."""
    from fencepost.clusters.hosts import netns
    if os.geteuid() != 0 or not os.path.exists("/usr/sbin/iptables"):
        pytest.skip("needs root and /usr/sbin/iptables")
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    reason = netns.unavailable_reason()
    assert reason is not None and "/usr/sbin" in reason and "add /usr/sbin to PATH" in reason, reason
    with pytest.raises(BadInput) as raised:
        build_spec({"nemesis": {"faults": "partition"}}, {})  # the default backend is process then
    assert "add /usr/sbin to PATH" in str(raised.value) and "partition" in str(raised.value)
