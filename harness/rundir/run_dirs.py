"""Making run directories and naming them: a fresh run directory
`<results>/<test-name>/<YYYYmmddTHHMMSS><UTC offset>-<6 hex>/` per run, `<results>/latest`
and `<results>/<test-name>/latest` pointing at the newest (relative symlinks, replaced
atomically), and the run's own log file `fencepost.log`.

The owner of run directory names: the time in a name is the machine's local time
with its UTC offset, `Z` for UTC (`20261125T210000Z-abc123`, `20261125T220000+0100-abc123`).
Names written before offsets were added (`20261125T210000-abc123`) are read as this
machine's local time. `run_started` reads both; nothing else parses the names.
"""
from __future__ import annotations

import logging
import re
import secrets
import time
from datetime import datetime
from pathlib import Path

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.atomic import point_latest
from fencepost.harness.rundir.names import LATEST, LOG_FILE
from fencepost.harness.rundir.safe_names import plain_name

# YYYYmmddTHHMMSS, an optional UTC offset (Z or +hhmm / -hhmm), then -<6 hex>.
RUN_NAME = re.compile(r"(\d{8}T\d{6})(Z|[+-]\d{4})?-[0-9a-f]{6}")


def new_run_dir(results: Path, test_name: str, now: datetime | None = None) -> Path:
    """A new `results`/`test_name`/<stamp>-<6 hex>/ and the `latest` links to it. `test_name` must
    be one plain name, so that the run lands in a folder of `results` (BadInput otherwise: nothing
    is made); which names a test may have is the spec's rule (harness/run/spec.py)."""
    if not plain_name(test_name):
        raise BadInput(f"test name {test_name!r}: a run directory is made under {results}/<test name>/, so the "
                       "name must be one plain file name (no '/', not empty, '.' or '..'); give another name")
    run_dir = results / test_name / f"{run_stamp(now)}-{secrets.token_hex(3)}"
    run_dir.mkdir(parents=True)
    point_latest(results / LATEST, run_dir)
    point_latest(results / test_name / LATEST, run_dir)
    return run_dir


def run_stamp(now: datetime | None = None) -> str:
    """The time part of a run directory's name: local time with its UTC offset
    (`20261125T210000Z`, `20261125T220000+0100`). A naive `now` is taken as local time."""
    moment = (now or datetime.now()).astimezone()
    offset = moment.strftime("%z")
    return moment.strftime("%Y%m%dT%H%M%S") + ("Z" if offset in ("+0000", "-0000") else offset)


def run_started(name: str) -> datetime | None:
    """When a run (or campaign) directory named `name` was made, as an aware datetime;
    None when the name is not one `new_run_dir` writes, in either form (module doc)."""
    match = RUN_NAME.fullmatch(name)
    if match is None:
        return None
    stamp, offset = match.groups()
    try:
        if offset is None:  # an older name: this machine's local time
            return datetime.strptime(stamp, "%Y%m%dT%H%M%S").astimezone()
        return datetime.strptime(stamp + ("+0000" if offset == "Z" else offset), "%Y%m%dT%H%M%S%z")
    except ValueError:  # digits that are no date (month 13, ...)
        return None


def format_time(moment: datetime) -> str:
    """A time as the report and the run list show it: `2026-11-25 21:00:00 +01:00`,
    `... UTC` at offset zero."""
    moment = moment.astimezone() if moment.tzinfo is None else moment
    offset = moment.utcoffset()
    zone = "UTC" if not offset else moment.strftime("%z")
    if zone != "UTC":
        zone = f"{zone[:3]}:{zone[3:]}"
    return f"{moment:%Y-%m-%d %H:%M:%S} {zone}"


class _OffsetFormatter(logging.Formatter):
    """Log times with milliseconds and the UTC offset: 2026-11-25T21:00:00.123+0000."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        local = time.localtime(record.created)
        return (time.strftime("%Y-%m-%dT%H:%M:%S", local) + f".{int(record.msecs):03d}"
                + time.strftime("%z", local))


def logged_at(line: str) -> datetime | None:
    """The time `_OffsetFormatter` wrote at the start of a fencepost.log line; None if none."""
    try:
        return datetime.strptime(line[:28], "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None


def run_logger(run_dir: Path, name: str = "fencepost.run") -> logging.Logger:
    """A logger writing to RUN_DIR/fencepost.log (its handler closed by `close_logger`)."""
    logger = logging.getLogger(f"{name}.{run_dir.name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(run_dir / LOG_FILE)
    handler.setFormatter(_OffsetFormatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger


def close_logger(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
