"""What runs on the hosts (docs/README.md, Layout): `own` (the project's broker and controller)
and `kafka:VERSION` (stock Apache Kafka, clusters/systems/kafka/).

A system is a `System` (systems/base.py); `system_for(name, options)` picks one.
For `kafka:VERSION` the version goes into the options; `kafka` alone takes the
distribution in the `kafka_home` option or the KAFKA_HOME environment variable.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.modes import RELEASE_PROTOCOL
from fencepost.clusters.systems.base import System

SYSTEMS = ("own", "kafka:VERSION")


def system_for(name: str, options: Mapping[str, Any] | None = None) -> System:
    if name == "own":
        from fencepost.clusters.systems.own import OwnSystem
        return OwnSystem.from_options(options or {})
    if is_kafka(name):
        from fencepost.clusters.systems.kafka.system import KafkaSystem
        opts = dict(options or {})
        version = name.partition(":")[2]
        if version:
            if opts.get("version") not in (None, "", version):
                raise ClusterConfigError(f"--system {name} but the options name version {opts['version']}")
            opts["version"] = version
        elif not opts.get("kafka_home") and not opts.get("libs"):
            opts["kafka_home"] = os.environ.get("KAFKA_HOME", "")
        return KafkaSystem.from_options(opts)
    raise ClusterConfigError(f"unknown system {name!r}: choose one of {', '.join(SYSTEMS)}")


def is_kafka(name: str) -> bool:
    """Stock Apache Kafka (`kafka` with its jars given, or `kafka:VERSION`)."""
    return name == "kafka" or name.startswith("kafka:")


def default_truncation(name: str) -> str:
    """The truncation of a run on system `name` that names none: stock Kafka's own protocol
    (`release`), kip320 on the own broker."""
    return RELEASE_PROTOCOL if is_kafka(name) else "kip320"


def check_system(name: str) -> None:
    """`name` is a system, and for `kafka:VERSION` a release that can run here (known without its
    jars, which are resolved at setup). ClusterConfigError says why not."""
    if name != "own" and not is_kafka(name):
        raise ClusterConfigError(f"unknown system {name!r}: choose own, or kafka:VERSION (e.g. kafka:3.9.1, "
                                 f"kafka:0.10.2.2)")
    version = name.partition(":")[2]
    if version:
        from fencepost.clusters.systems.kafka.release import Release
        Release.parse(version)


def check_system_options(name: str, options: Mapping[str, Any]) -> None:
    """What system `name` (checked by `check_system`) can judge of its options before anything
    runs: names, kinds, values, and for `kafka:VERSION` what the release cannot do with them.
    ClusterConfigError names what is wrong."""
    if name == "own":
        from fencepost.clusters.systems.own import OwnOptions
        OwnOptions.from_mapping(options)
    elif is_kafka(name):
        from fencepost.clusters.systems.kafka.options import KafkaOptions
        checked = KafkaOptions.from_mapping(options)
        version = name.partition(":")[2]
        if version:
            checked.checked(version)
