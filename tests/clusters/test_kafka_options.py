"""The kafka system's options and the server.properties made from them, as pure code:
`--truncation` -> inter.broker.protocol.version per release, the mode each release defaults
to, the refusals (each naming the value and what to do instead), and broker_config having the
last word over the chaos defaults."""
from __future__ import annotations

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.systems.kafka import config
from fencepost.clusters.systems.kafka.config import Endpoint
from fencepost.clusters.systems.kafka.options import KafkaOptions


def checked(version: str = "3.9.1", **options) -> KafkaOptions:
    return KafkaOptions.from_mapping(options).checked(version)


def zk_properties(opts: KafkaOptions) -> dict[str, str]:
    return config.zk_broker_properties(opts, Endpoint(1, "10.0.0.1", 9092), "/data", "10.0.0.9:2181", 3)


@pytest.mark.parametrize("version, truncation, protocol", [
    ("3.9.1", "hw", "0.11.0-IV1"), ("3.9.1", "kip101", "0.11.0-IV2"), ("3.9.1", "kip279", "2.0-IV1"),
    ("3.9.1", "kip320", "2.1-IV2"), ("3.9.1", "release", None),
    ("0.10.2.2", "release", None), ("0.11.0.3", "hw", "0.11.0-IV1"), ("0.11.0.3", "kip101", "0.11.0-IV2"),
    ("1.1.1", "hw", "0.11.0-IV1"), ("2.0.1", "kip279", "2.0-IV1"), ("2.1.1", "kip320", "2.1-IV2"),
    ("4.4.0", "release", None)])
def test_truncation_is_the_release_own_or_an_inter_broker_protocol_version(version, truncation, protocol):
    assert checked(version, truncation=truncation).inter_broker_protocol == protocol


def test_the_default_truncation_is_the_release_own_protocol_and_named_so():
    opts = checked("0.11.0.3")
    assert opts.truncation == "release" and opts.inter_broker_protocol is None
    assert opts.protocol_description() == "kafka 0.11.0.3, its own protocol (KIP-101 leader epochs)"
    assert checked("0.10.2.2").protocol_description() == \
        "kafka 0.10.2.2, its own protocol (high-watermark truncation (before KIP-101))"
    assert checked("3.9.1", truncation="hw").protocol_description() == \
        ("kafka 3.9.1, high-watermark truncation (before KIP-101), emulated with inter.broker.protocol.version "
         "0.11.0-IV1")


def test_the_mode_defaults_to_zookeeper_before_4_and_kraft_from_4():
    assert checked("0.10.2.2").mode == "zk"
    assert checked("3.9.1").mode == "zk"
    assert checked("4.3.1").mode == "kraft"
    assert checked("3.9.1", mode="kraft").mode == "kraft"
    assert checked("3.3.2", mode="kraft").mode == "kraft"


@pytest.mark.parametrize("version, options, message", [
    ("3.9.1", {"mode": "kraft", "truncation": "hw"}, r"truncation 'hw' needs inter.broker.protocol.version "
                                                     r"0\.11\.0-IV1, which KRaft refuses"),
    ("4.3.1", {"truncation": "hw"}, r"truncation 'hw'.*KRaft refuses.*leave --truncation out"),
    ("4.3.1", {"truncation": "kip101"}, r"truncation 'kip101'.*KRaft refuses"),
    ("4.4.0", {"truncation": "kip320"}, r"truncation 'kip320' needs .*2\.1-IV2, which KRaft refuses"),
    ("3.9.1", {"mode": "kraft", "truncation": "kip279"}, r"truncation 'kip279' .*2\.0-IV1.*mode=zk"),
    ("0.10.2.2", {"truncation": "hw"}, r"truncation 'hw' needs .*0\.11\.0-IV1, which kafka 0\.10\.2\.2 does not "
                                       r"know .*own protocol is already hw: leave --truncation out"),
    ("0.10.2.2", {"truncation": "kip101"},
     r"kafka 0\.10\.2\.2 does not know .*own protocol is hw; for kip101 use a release from 0\.11\.0"),
    ("1.1.1", {"truncation": "kip279"}, r"2\.0-IV1, which kafka 1\.1\.1 does not know \(it came in 2\.0\.0\)"),
    ("2.0.1", {"truncation": "kip320"}, r"2\.1-IV2, which kafka 2\.0\.1 does not know"),
    ("4.3.1", {"mode": "zk"}, r"Kafka 4\.3\.1 has no ZooKeeper mode .*use mode=kraft"),
    ("3.2.3", {"mode": "kraft"}, r"Kafka 3\.2\.3 has no production KRaft mode .*from 3\.3"),
    ("2.8.2", {"mode": "kraft"}, r"Kafka 2\.8\.2 has no production KRaft mode"),
    ("3.9.1", {"mode": "raft"}, r"mode 'raft': choose zk .* or kraft"),
    ("3.9.1", {"truncation": "kip999"}, r"truncation 'kip999': choose one of hw, kip101, kip279, kip320, release"),
    ("3.9.1", {"flush": "lazyy"}, r"flush 'lazyy' on stock Kafka: choose one of os, fsync, lazy"),
    ("3.9.1", {"flush": "lazy", "lazy_model": "ext4"}, r"lazy_model 'ext4': choose journal or strict"),
    ("3.9.1", {"elr": True}, r"elr=true: Eligible Leader Replicas \(KIP-966\) exist in KRaft mode from Kafka "
                            r"4\.0; kafka 3\.9\.1 in ZooKeeper mode has none"),
    ("3.9.1", {"mode": "kraft", "elr": False}, r"elr=false: .*kafka 3\.9\.1 in KRaft mode has none"),
    ("4.1.1", {"elr": "yes"}, r"elr='yes': give true or false"),
    ("3.9.1", {"replicas": 3}, r"the kafka system has no option 'replicas'; its options are .*truncation"),
    ("3.9.1", {"session_timeout_ms": "3s"}, r"session_timeout_ms='3s': give a whole number"),
    ("3.9.1", {"heap_mb": True}, r"heap_mb=True: give a whole number"),
    ("3.9.1", {"controllers": 3}, r"controllers= is a KRaft option"),
    ("3.9.1", {"min_insync_replicas": 0}, r"min_insync_replicas: give at least 1"),
    ("3.9.1", {"broker_config": ["a=b"]}, r"broker_config=\['a=b'\]: give a table"),
    ("3.9.1", {"broker_config": {"a": "x\ny"}}, r"broker_config a='x\\ny': give a single-line"),
])
def test_what_kafka_cannot_express_is_refused_with_the_value_and_what_to_do(version, options, message):
    with pytest.raises(ClusterConfigError, match=message):
        checked(version, **options)


def test_broker_config_is_rendered_and_overrides_the_chaos_defaults():
    opts = checked(broker_config={"min.insync.replicas": 1, "unclean.leader.election.enable": True,
                                  "log.dir.note": "C:\\kafka"})
    assert opts.broker_config == {"min.insync.replicas": "1", "unclean.leader.election.enable": "true",
                                  "log.dir.note": "C:\\kafka"}
    props = zk_properties(opts)
    assert props["min.insync.replicas"] == "1" and props["unclean.leader.election.enable"] == "true"
    text = config.render(props)
    assert "min.insync.replicas=1\n" in text and "log.dir.note=C:\\\\kafka\n" in text
    assert text.count("min.insync.replicas=") == 1


def test_zookeeper_broker_properties_name_the_protocol_only_for_an_older_truncation():
    default = zk_properties(checked())
    assert "inter.broker.protocol.version" not in default
    assert default["min.insync.replicas"] == "2" and default["unclean.leader.election.enable"] == "false"
    assert default["zookeeper.connect"] == "10.0.0.9:2181" and default["broker.id"] == "1"
    assert zk_properties(checked(truncation="hw"))["inter.broker.protocol.version"] == "0.11.0-IV1"
    assert zk_properties(checked(truncation="kip320"))["inter.broker.protocol.version"] == "2.1-IV2"
    assert zk_properties(checked(flush="fsync"))["log.flush.interval.messages"] == "1"


def test_kraft_properties_give_each_node_its_roles_and_listeners():
    opts = checked("4.3.1")
    voters = [Endpoint(1001, "10.0.0.11", 9093), Endpoint(1002, "10.0.0.12", 9093)]

    def node(broker_port, controller_port):
        return config.kraft_properties(opts, 7, "10.0.0.7", broker_port, controller_port, "/data", voters, 3)

    combined, broker, controller = node(9092, 9093), node(9092, None), node(None, 9093)
    assert combined["process.roles"] == "broker,controller"
    assert combined["listeners"] == "PLAINTEXT://10.0.0.7:9092,CONTROLLER://10.0.0.7:9093"
    assert broker["process.roles"] == "broker" and broker["listeners"] == "PLAINTEXT://10.0.0.7:9092"
    assert broker["advertised.listeners"] == "PLAINTEXT://10.0.0.7:9092"
    assert controller["process.roles"] == "controller" and "advertised.listeners" not in controller
    assert controller["controller.quorum.voters"] == "1001@10.0.0.11:9093,1002@10.0.0.12:9093"
    assert all(p["node.id"] == "7" and "inter.broker.protocol.version" not in p
               for p in (combined, broker, controller))


def test_eligible_leader_replicas_follow_the_release_unless_the_option_says():
    assert checked("3.9.1").elr_on is None and checked("3.9.1", mode="kraft").elr_on is None
    assert checked("4.0.1").elr_on is False  # 4.0's kafka-storage version-mapping: eligible.leader.replicas.version=0
    assert checked("4.1.1").elr_on is True and checked("4.4.0").elr_on is True
    assert checked("4.0.1", elr=True).elr_on is True and checked("4.4.0", elr=False).elr_on is False


def test_the_storage_format_sets_the_elr_feature_only_when_asked():
    from fencepost.clusters.systems.kafka.config import format_features
    assert format_features(checked("4.1.1")) == ()
    assert format_features(checked("4.0.1", elr=True)) == ("--feature", "eligible.leader.replicas.version=1")
    assert format_features(checked("4.4.0", elr=False)) == ("--feature", "eligible.leader.replicas.version=0")


def test_settings_4_0_removed_go_only_to_the_releases_that_know_them():
    """4.0 dropped the ZooKeeper-era controlled-shutdown retries and the imbalance percentage
    (its startup dump lists none of them: bench/kafka_releases.py); 3.9 still reads them."""
    removed = {"leader.imbalance.per.broker.percentage", "controlled.shutdown.max.retries",
               "controlled.shutdown.retry.backoff.ms"}
    assert removed <= set(config.chaos_defaults(checked("3.9.1"), 3))
    assert not removed & set(config.chaos_defaults(checked("4.4.0", mode="kraft"), 3))
    assert not removed & set(config.chaos_defaults(checked("4.0.0", mode="kraft"), 3))
