"""What a run was made with: fencepost's own version, Python, the client library
(confluent-kafka and the librdkafka inside it), Java, and which reader reads run files.

Each value is asked of the thing itself (package metadata, the library, `java -version`),
never remembered: a run directory records the versions of the day it was made.
"""
from __future__ import annotations

import platform
from importlib import metadata
from importlib.util import find_spec
from typing import Any

from clusters.systems.kafka.dist import java_version


def fencepost_version() -> str:
    try:
        return metadata.version("fencepost")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def client_versions() -> dict[str, str]:
    """confluent-kafka's and librdkafka's versions (the client the workloads use)."""
    try:
        import confluent_kafka
    except ImportError:
        return {"confluent_kafka": "not installed", "librdkafka": "not installed"}
    version = confluent_kafka.version()  # a string today; (string, number) in older releases
    return {"confluent_kafka": version if isinstance(version, str) else version[0],
            "librdkafka": confluent_kafka.libversion()[0]}


def history_reader() -> str:
    """Which reader reads history.jsonl and final.jsonl: the C reader when it was built."""
    return "C reader (harness._native)" if find_spec("harness._native") else "Python readers (C reader not built)"


def versions(java: bool = False) -> dict[str, Any]:
    """fencepost, Python and the client library; Java too when asked (it starts a JVM: ~0.1 s)."""
    found: dict[str, Any] = {"fencepost": fencepost_version(), "python": platform.python_version(),
                             **client_versions()}
    if java:
        found["java"] = java_version()
    return found
