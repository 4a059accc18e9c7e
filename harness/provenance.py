"""What a run was made with: fencepost's own version, Python, the client library
(confluent-kafka and the librdkafka inside it), Java, and which reader reads run files.

Each value is asked of the thing itself (package metadata, the library, `java -version`),
never remembered: a run directory records the versions of the day it was made.
"""
from __future__ import annotations

import platform
from importlib import metadata
from typing import Any

from fencepost.clusters import java_version


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
    return "C reader (harness._native)" if _c_reader_built() else "Python readers (C reader not built)"


def python_reader_notice() -> str | None:
    """The line `fencepost check` and `fencepost run` print on stderr where the
    C reader was not built (None where it was): the run files are read by the
    Python reader, several times slower, and how to get the C reader."""
    if _c_reader_built():
        return None
    return ("fencepost: the run files are read by the Python reader (slower): the C reader "
            "(harness._native) was not built; to build it, install a C compiler (e.g. `apt-get "
            "install gcc`), then reinstall fencepost with `pip install -e .`")


def _c_reader_built() -> bool:
    from fencepost.harness.check import native_load  # imports the C reader, if it was built

    return native_load.available()


def versions(java: bool = False) -> dict[str, Any]:
    """fencepost, Python and the client library; Java too when asked (it starts a JVM: ~0.1 s)."""
    found: dict[str, Any] = {"fencepost": fencepost_version(), "python": platform.python_version(),
                             **client_versions()}
    if java:
        found["java"] = java_version()
    return found
