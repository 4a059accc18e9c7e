"""What runs on the hosts (README, Layout): `own` (the project's broker and controller)
and `kafka:VERSION` (stock Apache Kafka, clusters/systems/kafka/).

A system is a `System` (systems/base.py); `system_for(name, options)` picks one.
For `kafka:VERSION` the version goes into the options; `kafka` alone takes the
distribution in the `kafka_home` option or the KAFKA_HOME environment variable.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from clusters.errors import ClusterConfigError
from clusters.systems.base import System

SYSTEMS = ("own", "kafka:VERSION")


def system_for(name: str, options: Mapping[str, Any] | None = None) -> System:
    if name == "own":
        from clusters.systems.own import OwnSystem
        return OwnSystem.from_options(options or {})
    if name == "kafka" or name.startswith("kafka:"):
        from clusters.systems.kafka.system import KafkaSystem
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
