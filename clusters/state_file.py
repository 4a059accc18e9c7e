"""Where a cluster's state lives between commands: `<root>/<name>/cluster.json`
(default root `results/clusters`), written atomically (temp file, fsync, rename)
so a harness killed mid-write leaves the previous state, never half of one.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from fencepost.clusters.errors import ClusterConfigError

STATE_FILE = "cluster.json"
DEFAULT_ROOT = Path("results/clusters")
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,30}")


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise ClusterConfigError(f"cluster name {name!r}: use 1-31 lowercase letters, digits and dashes, "
                                 f"starting with a letter or digit")
    return name


def state_path(directory: Path) -> Path:
    return directory / STATE_FILE


def save_state(directory: Path, state: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{STATE_FILE}.tmp"
    with open(tmp, "wb") as f:
        f.write(orjson.dumps(state, option=orjson.OPT_INDENT_2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, state_path(directory))


def load_state(directory: Path) -> dict[str, Any]:
    path = state_path(directory)
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise ClusterConfigError(f"no cluster recorded at {directory} (no {STATE_FILE}): start one with "
                                 f"`fencepost cluster up --name {directory.name}`, or list them with "
                                 f"`fencepost cluster status`") from None
    except orjson.JSONDecodeError as e:
        raise ClusterConfigError(f"{path} is not valid JSON ({e}); remove the cluster's leftovers with "
                                 f"`fencepost cleanup` and delete {directory}") from None
    except OSError as e:  # a regular file on the way (NotADirectoryError), no permission, ...
        raise ClusterConfigError(f"cannot read {path}: {e.strerror}; check the results folder "
                                 f"(--results) and that {directory} is a folder you may read") from None


def recorded_clusters(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob(f"*/{STATE_FILE}")) if root.is_dir() else []
