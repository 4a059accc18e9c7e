"""What runs on the hosts (DESIGN.md §4.2): `own` (the project's broker and
controller); stock Apache Kafka arrives with issue 7.

A system is a `System` (systems/base.py); `system_for(name, options)` picks one.
"""
from __future__ import annotations

from typing import Any, Mapping

from clusters.errors import ClusterConfigError
from clusters.systems.base import System

SYSTEMS = ("own",)


def system_for(name: str, options: Mapping[str, Any] | None = None) -> System:
    if name == "own":
        from clusters.systems.own import OwnSystem
        return OwnSystem.from_options(options or {})
    if name.startswith("kafka"):
        raise ClusterConfigError(f"--system {name}: stock Apache Kafka is not supported yet; use --system own")
    raise ClusterConfigError(f"unknown system {name!r}: choose one of {', '.join(SYSTEMS)}")
