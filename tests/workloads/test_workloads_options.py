"""Workload options and the ok/fail/info rule, without a cluster: what each option
becomes in librdkafka's configuration, refusals that name the option, and which
delivery errors prove that a write did not happen."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.workloads.consumer import ConsumerOptions, ConsumerWorkload
from fencepost.workloads.outcomes import delivery_type, has_definite_failures
from fencepost.workloads.producer import ProducerOptions, ProducerWorkload
from fencepost.workloads.recording import WorkloadConfigError


def test_producer_options_become_librdkafka_settings():
    config = ProducerOptions(max_in_flight=3, linger_ms=2, message_timeout_ms=7000, request_timeout_ms=3000,
                             librdkafka={"linger.ms": 4}).config("h:1", in_flight=10)
    assert config == {"bootstrap.servers": "h:1", "acks": "all", "enable.idempotence": False, "retries": 0,
                      "max.in.flight.requests.per.connection": 3, "linger.ms": 4,
                      "message.timeout.ms": 7000, "request.timeout.ms": 3000,
                      "queue.buffering.max.messages": 100_000}
    # an idempotent producer must retry: retries 0 leaves librdkafka's default
    assert "retries" not in ProducerOptions(idempotent=True).config("h:1", 1)
    assert ProducerOptions(idempotent=True, retries=5).config("h:1", 1)["retries"] == 5


@pytest.mark.parametrize("options, message", [
    (ProducerOptions(partition_choice="hash"), "partition_choice 'hash': choose one of round-robin, random, key"),
    (ProducerOptions(retries=-1), "retries = -1: give a whole number >= 0"),
    (ProducerOptions(max_in_flight=0), "max_in_flight = 0"),
    (ProducerOptions(idempotent=True, max_in_flight=6), "at most 5"),
    (ProducerOptions(topic=""), "topic is empty"),
])
def test_producer_refusals_name_the_option(options, message):
    with pytest.raises(WorkloadConfigError, match=message):
        options.check()


@pytest.mark.parametrize("options, message", [
    (ConsumerOptions(mode="group"), "mode 'group': choose one of assign, subscribe"),
    (ConsumerOptions(max_records=0), "max_records = 0"),
    (ConsumerOptions(poll_interval_s=0), "poll_interval_s = 0"),
])
def test_consumer_refusals_name_the_option(options, message):
    with pytest.raises(WorkloadConfigError, match=message):
        options.check()


def test_consumer_positions_never_move_silently():
    assign = ConsumerOptions().config("h:1", 1000)
    assert assign["auto.offset.reset"] == "error" and assign["enable.auto.commit"] is False
    assert assign["group.id"] == "fencepost-1000"  # its own: assign mode joins no group
    subscribe = ConsumerOptions(mode="subscribe", group="g").config("h:1", 1001)
    # a group member's commits are the workload's, recorded: never librdkafka's unrecorded auto-commit
    assert (subscribe["group.id"], subscribe["enable.auto.commit"]) == ("g", False)
    mixed = ConsumerOptions(mode="mixed", group="g")
    assert mixed.config("h:1", 1002, subscribing=True)["group.id"] == "g"
    assert mixed.config("h:1", 1002, subscribing=False)["group.id"] == "g-1002"


def test_client_options_are_checked():
    with pytest.raises(WorkloadConfigError, match="client 'each'"):
        ProducerOptions(client="each").check()
    ProducerOptions(client="per-process").check()
    with pytest.raises(WorkloadConfigError, match="subscribe_p"):
        ConsumerOptions(mode="mixed", subscribe_p=1.5).check()
    with pytest.raises(WorkloadConfigError, match="commit_interval_s"):
        ConsumerOptions(commit_interval_s=-1).check()


def test_only_a_producer_that_never_retries_has_definite_failures():
    assert has_definite_failures(idempotent=False, retries=0)
    assert not has_definite_failures(idempotent=False, retries=1)
    assert not has_definite_failures(idempotent=True, retries=0)
    assert ProducerOptions().definite_failures and not ProducerOptions(retries=3).definite_failures


@pytest.mark.parametrize("code, definite, expected", [
    (KafkaError.INVALID_REQUIRED_ACKS, True, "fail"),  # the same answer to every attempt
    (KafkaError.INVALID_REQUIRED_ACKS, False, "info"),  # a retry of an earlier, timed-out attempt may have landed
    # librdkafka re-sends after a leader change without counting a retry: an earlier attempt may be in the log
    (KafkaError.NOT_ENOUGH_REPLICAS, True, "info"),
    (KafkaError.UNKNOWN_TOPIC_OR_PART, True, "info"),
    (KafkaError.MSG_SIZE_TOO_LARGE, True, "info"),
    (KafkaError.NOT_LEADER_FOR_PARTITION, True, "info"),  # answered after the append
    (KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, True, "info"),
    (KafkaError._MSG_TIMED_OUT, True, "info"),
    (KafkaError.REQUEST_TIMED_OUT, True, "info"),
    (KafkaError._TRANSPORT, True, "info"),
])
def test_delivery_errors(code, definite, expected):
    assert delivery_type(KafkaError(code), definite) == expected


def test_a_delivery_without_error_is_ok():
    assert delivery_type(None, True) == delivery_type(None, False) == "ok"


def test_settings_librdkafka_refuses_are_refused_when_the_workload_is_built(tmp_path):
    recorder = Recorder(HistoryWriter(tmp_path / "history.jsonl"))  # never written: nothing runs
    with pytest.raises(WorkloadConfigError, match="librdkafka refused the producer settings .*no.such.setting"):
        ProducerWorkload("127.0.0.1:9", recorder, [0], [0], ProducerOptions(librdkafka={"no.such.setting": 1}))
    with pytest.raises(WorkloadConfigError, match="librdkafka refused the consumer settings .*no.such.setting"):
        ConsumerWorkload("127.0.0.1:9", recorder, [0], [1000], ConsumerOptions(librdkafka={"no.such.setting": 1}))
    with pytest.raises(WorkloadConfigError, match="partition_choice 'key' needs every partition"):
        ProducerWorkload("127.0.0.1:9", recorder, [1, 2], [0], ProducerOptions(partition_choice="key"))
    with pytest.raises(WorkloadConfigError, match="process ids repeat"):
        ProducerWorkload("127.0.0.1:9", recorder, [0], [3, 3])
