"""The daemon's control channel, from Python: one command per connection to the unix socket
`BACKING/.fencepost-lazyfs/control.sock`, one line back (a JSON object with `ok`). The answer
comes when the command is done: after `drop` returns, the daemon has lost what was not durable
and answers every request with EIO.

Commands: `ping`, `stats`, `checkpoint`, `drop` (lazyfs.h and control.c say what each does).
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from fencepost.clusters.errors import HostError

STATE_DIR = ".fencepost-lazyfs"
SOCKET = "control.sock"
MAX_UNIX_PATH = 107  # sun_path holds 108 bytes with its NUL
COMMANDS = ("ping", "stats", "checkpoint", "drop")


def state_dir(backing: Path) -> Path:
    return backing / STATE_DIR


def socket_path(backing: Path) -> Path:
    return state_dir(backing) / SOCKET


def send(backing: Path, command: str, timeout: float = 60.0) -> dict[str, Any]:
    """The daemon's answer to `command`; HostError when it does not answer or says it failed."""
    if command not in COMMANDS:
        raise ValueError(f"unknown lazy filesystem command {command!r}: one of {', '.join(COMMANDS)}")
    try:
        line = _exchange(backing, command, timeout)
    except (OSError, socket.timeout) as e:
        raise HostError(f"the lazy filesystem over {backing} did not answer {command!r} on {socket_path(backing)} "
                        f"({e.__class__.__name__}: {e}); is its daemon running? (fencepost cleanup removes "
                        "what a crashed run left)") from None
    try:
        answer = json.loads(line)
    except ValueError:
        raise HostError(f"the lazy filesystem over {backing} answered {command!r} with {line!r}, not JSON") from None
    if not answer.get("ok"):
        raise HostError(f"the lazy filesystem over {backing}: {command} failed: {answer.get('error', answer)}")
    return answer


def _exchange(backing: Path, command: str, timeout: float) -> str:
    path = str(socket_path(backing))
    folder = None
    if len(path.encode()) > MAX_UNIX_PATH:  # through a descriptor of the folder, as the daemon binds it
        folder = os.open(state_dir(backing), os.O_PATH | os.O_DIRECTORY)
        path = f"/proc/self/fd/{folder}/{SOCKET}"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(path)
            conn.sendall(command.encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
    finally:
        if folder is not None:
            os.close(folder)
    if not data:
        raise ConnectionError("the connection closed without an answer")
    return data.decode(errors="replace").strip()
