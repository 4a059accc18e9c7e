"""Apache Kafka releases as rules (clusters/systems/kafka/release.py), as pure code: the Scala
build per release, the extra jars each needs on Java 17, the modes it has, the protocol it
runs of its own and what it can emulate. The rules themselves were checked on real releases:
tests/system/test_kafka_releases.py starts them."""
from __future__ import annotations

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.systems.kafka.release import JAXB, LOG4J_1, LOG4J_2, RELOAD4J, ZOOKEEPER_FOR_JAVA_17, Release


@pytest.mark.parametrize("text, scala", [("0.10.2.0", "2.11"), ("0.11.0.3", "2.11"), ("1.0.2", "2.12"),
                                         ("1.1.1", "2.12"), ("2.3.1", "2.12"), ("2.4.0", "2.13"),
                                         ("3.9.1", "2.13"), ("4.4.0", "2.13")])
def test_the_scala_build_is_the_one_each_release_recommended(text, scala):
    assert Release.parse(text).scala == scala


def test_releases_order_by_number_not_by_text():
    texts = ["4.4.0", "0.11.0.3", "2.10.0", "0.10.2.2", "2.1.1", "1.1.1", "2.9.0", "3.9.1", "0.10.2.10"]
    assert [str(r) for r in sorted(map(Release.parse, texts))] == [
        "0.10.2.2", "0.10.2.10", "0.11.0.3", "1.1.1", "2.1.1", "2.9.0", "2.10.0", "3.9.1", "4.4.0"]


@pytest.mark.parametrize("text, own", [("0.10.2.2", "hw"), ("0.11.0.0", "kip101"), ("1.1.1", "kip101"),
                                       ("2.0.0", "kip279"), ("2.0.1", "kip279"), ("2.1.0", "kip320"),
                                       ("4.4.0", "kip320")])
def test_each_release_runs_the_protocol_of_its_line(text, own):
    assert Release.parse(text).own_protocol == own


@pytest.mark.parametrize("text, extras", [
    ("0.10.2.2", JAXB), ("0.11.0.3", JAXB), ("1.0.2", ()), ("1.1.0", LOG4J_1),
    ("2.0.1", (ZOOKEEPER_FOR_JAVA_17, *LOG4J_1)),
    ("2.5.0", (ZOOKEEPER_FOR_JAVA_17, *LOG4J_1)), ("2.5.1", LOG4J_1), ("2.8.2", LOG4J_1), ("3.0.0", RELOAD4J),
    ("3.9.1", RELOAD4J), ("4.0.0", LOG4J_2)])
def test_java_17_extras_are_jaxb_before_1_0_a_zookeeper_client_for_2_0_to_2_5_0_and_the_logging_backend(
        text, extras):
    assert Release.parse(text).java17_extras() == tuple(extras)


def test_modes_zookeeper_before_4_and_kraft_from_3_3():
    assert Release.parse("3.9.1").has_zookeeper and not Release.parse("4.0.0").has_zookeeper
    assert Release.parse("3.3.0").has_kraft and not Release.parse("3.2.3").has_kraft
    assert (Release.parse("0.10.2.2").default_mode, Release.parse("4.1.0").default_mode) == ("zk", "kraft")


@pytest.mark.parametrize("text, message", [("3.9", "not an Apache Kafka release number"),
                                           ("0.10.2", "four parts before 1.0"),
                                           ("1.0.0.0", "not an Apache Kafka release number"),
                                           ("0.10.1.1", "older than 0.10.2.0"), ("0.8.2.2", "older than 0.10.2.0"),
                                           ("3.9.1\n", "not an Apache Kafka release number")])
def test_what_is_no_release_fencepost_runs_is_refused_with_what_to_give(text, message):
    with pytest.raises(ClusterConfigError, match=message):
        Release.parse(text)


def test_an_emulation_is_refused_where_the_ibp_is_unknown_or_the_mode_is_kraft():
    assert Release.parse("1.1.1").inter_broker_protocol("hw", "zk") == "0.11.0-IV1"
    assert Release.parse("1.1.1").inter_broker_protocol("release", "zk") is None
    with pytest.raises(ClusterConfigError, match="does not know"):
        Release.parse("1.1.1").inter_broker_protocol("kip279", "zk")
    with pytest.raises(ClusterConfigError, match="KRaft refuses"):
        Release.parse("3.9.1").inter_broker_protocol("kip320", "kraft")
    assert Release.parse("3.9.1").inter_broker_protocol("release", "kraft") is None


@pytest.mark.parametrize("version, major", [("17.0.15", 17), ("1.8.0_392", 8), ("25.0.3", 25), ("11", 11),
                                            (None, None), ("", None), ("java", None)])
def test_java_major_reads_both_numbering_schemes(version, major):
    from fencepost.clusters.systems.kafka.release import java_major
    assert java_major(version) == major


def test_a_java_older_than_a_release_needs_is_refused_naming_both():
    Release.parse("4.4.0").check_java("17.0.15")
    Release.parse("0.10.2.2").check_java("1.8.0_392")
    Release.parse("4.4.0").check_java(None)  # unknown: left to the JVM to say
    with pytest.raises(ClusterConfigError,
                       match=r"kafka 4\.4\.0 needs Java 17 or newer and `java` on PATH is 11\.0\.2"):
        Release.parse("4.4.0").check_java("11.0.2")
