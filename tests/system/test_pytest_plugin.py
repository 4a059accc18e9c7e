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


SUITE_WITH_OPTIONS = '''
import pytest

seen = {}


def test_one_cluster_for_the_session_first_use(fencepost_clusters):
    cluster = fencepost_clusters(nodes=3, partitions=1)
    seen["bootstrap"] = cluster.bootstrap
    leader = cluster.partition_view("fp", 0).leader
    cluster.pause(leader)  # left paused: the factory heals it before handing it out again


def test_one_cluster_for_the_session_second_use(fencepost_clusters):
    cluster = fencepost_clusters(nodes=3, partitions=1)
    assert cluster.bootstrap == seen["bootstrap"]
    assert all(cluster.node_state(node) == "running" for node in cluster.broker_nodes)


def test_a_run_kept_in_the_results_folder(fencepost_run):
    result = fencepost_run(time_limit=3, rate=100, concurrency=2, **{"nemesis.faults": "kill"},
                           **{"nemesis.interval": 1.0})
    assert result.valid, result.summary
    assert result.report is not None and result.report.is_file()


@pytest.mark.fencepost_cluster(nodes=3, partitons=2)
def test_a_misspelt_marker_argument(fencepost_cluster):
    pass
'''


def test_the_plugins_options_in_a_users_suite(pytester, tmp_path):
    """--fencepost-results keeps the runs (and index.html), the report path is a property of
    the test in the JUnit XML, the session's cluster is started once, and a misspelt marker
    argument fails its test naming it."""
    from xml.etree import ElementTree as ET

    results = tmp_path / "kept"
    pytester.makepyfile(test_user=SUITE_WITH_OPTIONS)
    junit = tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess("--fencepost-backend", "process", "--fencepost-results", str(results),
                                           f"--junitxml={junit}", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*unknown argument 'partitons' (did you mean partitions?)*"])
    runs = list(results.glob("test_user.py-test_a_run_kept_in_the_results_folder/fencepost/2*"))
    assert len(runs) == 1 and (runs[0] / "report.html").is_file() and (results / "index.html").is_file()
    assert len(list((results / "clusters").iterdir())) == 1  # one cluster for the two tests of the session
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    properties = {p.get("name"): p.get("value")
                  for p in cases["test_a_run_kept_in_the_results_folder"].iter("property")}
    assert properties["fencepost_report"] == str(runs[0] / "report.html")
    assert properties["fencepost_verdict"] == "valid" and properties["fencepost_run_dir"] == str(runs[0])
