"""A broker's or the controller's log: timestamped lines to stderr and, when asked, appended to a file."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-5s [node %(node_id)s] %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"


class _NodeIdFilter(logging.Filter):
    def __init__(self, node_id: int) -> None:
        super().__init__()
        self.node_id = node_id

    def filter(self, record: logging.LogRecord) -> bool:
        record.node_id = self.node_id
        return True


def configure_logging(node_id: int, level: str = "INFO", log_file: Path | None = None) -> None:
    """Route the `broker` loggers (and asyncio's) to stderr and `log_file`; called once by `serve` and by
    `controller`."""
    formatter = logging.Formatter(FORMAT, DATE_FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    for h in handlers:
        h.setFormatter(formatter)
        h.addFilter(_NodeIdFilter(node_id))
    for name in ("broker", "asyncio"):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.propagate = False
        for h in list(logger.handlers):
            logger.removeHandler(h)
        for h in handlers:
            logger.addHandler(h)
