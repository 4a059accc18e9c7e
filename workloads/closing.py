"""Closing a librdkafka consumer without hanging the harness.

`rd_kafka_consumer_close` can wait for ever: seen on 2026-11-22 with librdkafka 2.16
(an assign-mode consumer after overlapping kill, pause and partition faults; the
brokers were healed and up, the close still waited eight minutes later). A run must
end, so the close runs in a daemon thread and is waited for a bounded time; a
consumer still closing then is abandoned (its thread holds it, so it is never
destroyed under the harness; a daemon thread does not keep the process alive).
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from confluent_kafka import KafkaException

CLOSE_TIMEOUT_S = 10.0

log = logging.getLogger(__name__)


def close_within(consumer: Any, timeout_s: float = CLOSE_TIMEOUT_S, what: str = "consumer") -> bool:
    """Close `consumer`, waiting at most `timeout_s`; False (and a warning) when it was abandoned.
    Errors of a consumer that failed are ignored: it is gone either way."""
    closed = threading.Event()

    def close() -> None:
        try:
            consumer.close()
        except (KafkaException, RuntimeError):
            pass
        finally:
            closed.set()

    threading.Thread(target=close, name=f"closing {what}", daemon=True).start()
    if closed.wait(timeout_s):
        return True
    log.warning("%s did not close within %.0f s (librdkafka); abandoned, the run goes on", what, timeout_s)
    return False
