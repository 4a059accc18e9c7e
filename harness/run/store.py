"""The results store (DESIGN.md §3.1): a fresh run directory
`<results>/<test-name>/<YYYYmmddTHHMMSS>-<6 hex>/` per run, `<results>/latest` and
`<results>/<test-name>/latest` pointing at the newest (relative symlinks, replaced
atomically), and the run's own log file `fencepost.log`.
"""
from __future__ import annotations

import logging
import os
import secrets
from datetime import datetime
from pathlib import Path

LATEST = "latest"
LOG_FILE = "fencepost.log"


def new_run_dir(results: Path, test_name: str, now: datetime | None = None) -> Path:
    stamp = (now or datetime.now()).strftime("%Y%m%dT%H%M%S")
    run_dir = results / test_name / f"{stamp}-{secrets.token_hex(3)}"
    run_dir.mkdir(parents=True)
    point_latest(results / LATEST, run_dir)
    point_latest(results / test_name / LATEST, run_dir)
    return run_dir


def point_latest(link: Path, target: Path) -> None:
    """`link` -> `target` (relative), replacing an older link in one rename."""
    relative = os.path.relpath(target, link.parent)
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(relative, target_is_directory=True)
    os.replace(tmp, link)


def write_atomically(path: Path, data: bytes) -> None:
    """`path` holds `data` whole or its old content, never a part: written beside it, fsynced,
    renamed over it, and the directory fsynced (the rename survives a power cut too)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def run_logger(run_dir: Path, name: str = "fencepost.run") -> logging.Logger:
    """A logger writing to RUN_DIR/fencepost.log (its handler closed by `close_logger`)."""
    logger = logging.getLogger(f"{name}.{run_dir.name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(run_dir / LOG_FILE)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger


def close_logger(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
