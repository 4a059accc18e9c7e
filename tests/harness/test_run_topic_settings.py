"""The [topic] settings reach the topic the run creates: unclean leader election."""
from __future__ import annotations

import io
import logging

import pytest

from fencepost.harness.errors import BadInput
from fencepost.harness.run.progress import Progress
from fencepost.harness.run.runner import _setup, _teardown
from fencepost.harness.run.spec import build_spec


def test_unclean_leader_election_is_off_unless_asked_for():
    assert build_spec({}, {}).topic.configs() == {}
    spec = build_spec({"topic": {"unclean_leader_election": True, "min_insync_replicas": 1}}, {})
    assert spec.topic.configs() == {"unclean.leader.election.enable": "true"}
    assert spec.to_json()["topic"]["unclean_leader_election"] is True  # test.json says how the run was set up


def test_a_bad_unclean_leader_election_value_is_named():
    with pytest.raises(BadInput, match=r"topic.unclean_leader_election = 'yes': give true or false"):
        build_spec({"topic": {"unclean_leader_election": "yes"}}, {})


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("unclean", [True, False])
def test_the_run_creates_its_topic_with_the_unclean_setting(tmp_path, unclean):
    spec = build_spec({"backend": "process", "nemesis": {"faults": "none"},
                       "topic": {"unclean_leader_election": unclean, "min_insync_replicas": 1}}, {})
    log = logging.getLogger(f"test-unclean-{unclean}")
    progress = Progress(io.StringIO(), live=False)
    cluster = _setup(spec, tmp_path, progress, log)
    try:
        topics = cluster.system.describe(cluster.hosts)["topics"]
    finally:
        _teardown(cluster, tmp_path, progress, log, None)
    configs = {t["name"]: t["configs"] for t in topics}[spec.topic.name]
    assert configs.get("unclean.leader.election.enable", "false") == ("true" if unclean else "false")
    assert configs["min.insync.replicas"] == "1"
