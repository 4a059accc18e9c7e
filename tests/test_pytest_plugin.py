"""The `fencepost` pytest plugin as a user meets it: an inner pytest session (pytester,
in a subprocess) with a test file of the user's that brings up a cluster, produces to it,
and runs a chaos test, all through the plugin's fixtures."""
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER_TESTS = '''
import pytest
from confluent_kafka import Producer


@pytest.mark.fencepost_cluster(nodes=3, partitions=2)
def test_acks_all_writes_are_acknowledged(fencepost_cluster):
    assert fencepost_cluster.partitions("fp") == [0, 1]
    acked = []
    producer = Producer({"bootstrap.servers": fencepost_cluster.bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce("fp", value=b"v%d" % i, on_delivery=lambda err, msg: acked.append(err is None))
    producer.flush(30)
    assert acked.count(True) == 20


def test_a_short_chaos_run_is_valid(fencepost_run):
    result = fencepost_run(time_limit=3, rate=100, concurrency=2, **{"nemesis.faults": "kill"},
                           **{"nemesis.interval": 1.0})
    assert result.valid, result.summary
    assert (result.run_dir / "history.jsonl").is_file() and result.exit_code == 0

'''


def test_the_fixtures_work_in_a_users_suite(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("--fencepost-backend", "process", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=2)


def test_an_unknown_run_setting_fails_the_users_test_with_the_reason(pytester):
    pytester.makepyfile(test_user='''
def test_bad(fencepost_run):
    fencepost_run(rate=-1)
''')
    result = pytester.runpytest_subprocess("--fencepost-backend", "process", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rate = -1: give operations per second > 0*"])
