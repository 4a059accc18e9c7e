"""The client logs of a run, read for the report and for `fencepost check`'s summary: which
consumer process has a log under `clients/` (workloads/client_log.py writes
`clients/<process>.log` when a consumer was stuck, crashed or did not close in time, and
workloads/client_stacks.py `clients/<process>.stacks.<n>.txt` beside it), why each was
written, and which stacks files lie beside it. The writers own the format (docs/FORMATS.md);
this is its reader.

Why: the log's `=== ... ===` header lines — `=== <time> client <process> flushed: <why>; N
lines held, M earlier lines dropped by the ring ===` where it was first written, `=== <time>
client <process>: <why> ===` for each later flush (a stacks dump, a close given up on) — read
from the first HEADER_BYTES of the file, at most MAX_REASONS of them.

A run directory may hold any bytes: only names that are a process id in its plain decimal
form (`1000.log`, `1000.stacks.1.txt`) are taken; a file is taken only when it is a regular
file whose path, every link resolved, lies inside the run directory (harness/rundir/
safe_names.py `contained` for the folder); anything else in `clients/` is listed by name
(`ClientFiles.unlinked`), never linked. A missing or garbled header is said, not raised.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.names import CLIENTS_DIR
from fencepost.harness.rundir.safe_names import contained

HEADER_BYTES = 8 << 20  # of a log read for its header lines (a flushed ring is ~1-5 MiB)
MAX_REASONS = 8  # header lines kept per log
REASON_CHARS = 600  # of one reason shown
MAX_FILES = 1000  # entries of clients/ looked at
_PROCESS = r"(0|[1-9][0-9]{0,17})"  # a process id as the writer spells it (fits in 64 bits)
_LOG = re.compile(_PROCESS + r"\.log")
_STACKS = re.compile(_PROCESS + r"\.stacks\.([1-9][0-9]{0,5})\.txt")
_FIRST = re.compile(r"=== \S+ client \S+ flushed: (.*); \d+ lines held, \d+ earlier lines dropped by the ring ===")
_LATER = re.compile(r"=== \S+ client \S+: (.*) ===")
NO_HEADER = "its first line is not the header the workload writes (=== <time> client <process> flushed: <why>; ... ===)"


@dataclass(slots=True)
class ClientLog:
    """One process's files under clients/ (paths relative to the run directory)."""
    process: int
    log: str | None = None  # "clients/<process>.log", when it is there
    stacks: list[str] = field(default_factory=list)  # "clients/<process>.stacks.<n>.txt", by n
    reasons: list[str] = field(default_factory=list)  # why it was written, each flush in order
    unreadable: str | None = None  # why no reason could be read from the log


@dataclass(slots=True)
class ClientFiles:
    """What `clients/` holds: the logs by process, the names that are no process's file, and why
    the folder could not be read (if so)."""
    logs: dict[int, ClientLog] = field(default_factory=dict)
    unlinked: list[str] = field(default_factory=list)  # "clients/<name>: why not linked"
    problem: str | None = None

    def __bool__(self) -> bool:
        return bool(self.logs or self.unlinked or self.problem)


def client_files(run_dir: Path) -> ClientFiles:
    """Every process's client log and stacks under RUN_DIR/clients/ (module doc); an empty
    ClientFiles when there is no such folder."""
    found = ClientFiles()
    try:
        # `contained` resolves the folders on the way to its last name: clients/ is one of them
        folder = contained(run_dir, CLIENTS_DIR, "x").parent
        if not folder.is_dir():
            return found
        names = sorted(entry.name for _, entry in zip(range(MAX_FILES), folder.iterdir()))
    except BadInput:
        found.problem = f"{CLIENTS_DIR}/ leads outside the run directory: its files are not linked"
        return found
    except OSError as e:
        found.problem = f"{CLIENTS_DIR}/ could not be read ({e.strerror or e})"
        return found
    root = run_dir.resolve()
    for name in names:
        log, stacks = _LOG.fullmatch(name), _STACKS.fullmatch(name)
        if name.endswith(".gdb-stderr"):
            continue  # gdb's stderr while it runs (workloads/client_stacks.py), removed after
        if log is None and stacks is None:
            found.unlinked.append(f"{CLIENTS_DIR}/{name}: not named after a process id")
            continue
        path = folder / name
        why = _not_linkable(path, root)
        if why is not None:
            found.unlinked.append(f"{CLIENTS_DIR}/{name}: {why}")
            continue
        match = log or stacks
        assert match is not None  # one of them matched: the name was taken above
        process = int(match.group(1))
        entry = found.logs.setdefault(process, ClientLog(process))
        if log is not None:
            entry.log = f"{CLIENTS_DIR}/{name}"
            entry.reasons, entry.unreadable = read_reasons(path)
        else:
            entry.stacks.append(f"{CLIENTS_DIR}/{name}")
    for entry in found.logs.values():
        entry.stacks.sort(key=lambda p: int(p.rsplit(".", 2)[-2]))
    found.logs = dict(sorted(found.logs.items()))
    return found


def client_log(run_dir: Path, process: Any) -> Path | None:
    """RUN_DIR/clients/<process>.log when `process` is an integer and that log is a regular file
    inside the run directory; else None (for `fencepost check`'s summary)."""
    if type(process) is not int or not _LOG.fullmatch(f"{process}.log"):
        return None
    try:
        path = contained(run_dir, CLIENTS_DIR, f"{process}.log")
    except BadInput:
        return None
    return path if _not_linkable(path, run_dir.resolve()) is None else None


def read_reasons(path: Path) -> tuple[list[str], str | None]:
    """Why the log was written, from its header lines: (reasons, None), or ([], why none could be read)."""
    try:
        with open(path, "rb") as file:
            head = file.read(HEADER_BYTES)
    except OSError as e:
        return [], f"it could not be read ({e.strerror or e})"
    if not head:
        return [], "it is empty"
    reasons = []
    for number, raw in enumerate(head.split(b"\n")):
        if not raw.startswith(b"=== "):
            if number == 0:
                return [], NO_HEADER
            continue
        line = raw.decode("utf-8", "replace").rstrip("\r")
        match = _FIRST.fullmatch(line) or _LATER.fullmatch(line)
        if match is None:
            if number == 0:
                return [], NO_HEADER
            continue
        why = match.group(1)
        reasons.append(why if len(why) <= REASON_CHARS else why[:REASON_CHARS] + "...")
        if len(reasons) == MAX_REASONS:
            break
    return reasons, None


def debug_was(test: dict[str, Any]) -> str | None:
    """test.json's `clients.debug` (the run's librdkafka debug contexts, "" for off), or None when
    test.json does not say (a run from before client logs)."""
    clients = test.get("clients")
    debug = clients.get("debug") if isinstance(clients, dict) else None
    return debug if isinstance(debug, str) else None


def _not_linkable(path: Path, root: Path) -> str | None:
    try:
        resolved = path.resolve()
        if not resolved.is_relative_to(root):
            return "it leads outside the run directory"
        if not resolved.is_file():
            return "not a regular file"
    except (OSError, RuntimeError) as e:  # a link loop
        return f"it could not be read ({getattr(e, 'strerror', None) or e})"
    return None
