"""test.json read in one place: the whole document as the run wrote it (`read_test`), and its
`checker` section typed (`checker_section`): how the run is checked (docs/FORMATS.md, test.json;
docs/CHECKERS.md). Every reader of what test.json says about checking goes through here: the
loader, the run spec's `[checker]` check, and the analysis on Spark.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from fencepost.checkers.anomaly import ALL as ALL_ANOMALIES
from fencepost.checkers.anomaly import default_invalid
from fencepost.checkers.partition import CheckOptions
from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.names import TEST_FILE

LINEAR_METHODS = ("witness", "search")
INT64_MAX = 2**63 - 1  # every integer of a run file is an int64 (docs/FORMATS.md)
# The keys of the `checker` section (docs/FORMATS.md, test.json); any other is refused.
CHECKER_KEYS = ("invalid", "linearizability", "linear_method", "search_budget")
# A test.json larger than this is refused unread (a spec is a few KiB).
MAX_TEST_BYTES = 16 << 20
# The sections the checker reads: each an object (or null, or absent: the defaults).
SECTIONS = ("checker", "producer")


@dataclass(frozen=True, slots=True)
class CheckerSection:
    """How a run is checked: the checkers' options and the anomaly names that make it invalid
    (`checker.invalid`, else the default set for its producer, `checkers.anomaly.default_invalid`)."""

    options: CheckOptions
    invalid: frozenset[str]


def read_test(path: Path) -> dict[str, Any]:
    """test.json at `path` as a dict; {} when absent (it is optional). BadInput when it is no
    JSON object."""
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode):  # a directory; a FIFO would block the read forever
            raise BadInput(f"{path}: not a regular file; it must be a file holding a JSON object, or "
                           f"absent (it is optional)")
        if status.st_size > MAX_TEST_BYTES:
            raise BadInput(f"{path}: {status.st_size} bytes, more than a test spec ever holds "
                           f"({MAX_TEST_BYTES >> 20} MiB): not read; fix or remove it (it is optional)")
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:  # no permission, an I/O error
        raise BadInput(f"{path}: cannot be read ({e.strerror or e}); it must be a regular file "
                       f"holding a JSON object, or absent (it is optional)") from None
    try:
        test = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON ({e}); fix or remove it (it is optional)") from None
    if type(test) is not dict:
        raise BadInput(f"{path}: expected a JSON object, got {type(test).__name__}")
    return test


def checker_section(test: dict[str, Any], where: Path | str = TEST_FILE) -> CheckerSection:
    """The checker section of `test` (a test.json document, or a spec's settings), each field
    checked for its kind and value; BadInput names the field (`where` says which file)."""
    for section in SECTIONS:
        node = test.get(section)
        if node is not None and type(node) is not dict:
            raise BadInput(f"{where}: field \"{section}\": expected an object, got "
                           f"{orjson.dumps(node).decode()[:80]}; fix it, or remove it for the defaults")
    unknown = sorted(set(test.get("checker") or ()) - set(CHECKER_KEYS))
    if unknown:
        raise BadInput(f"{where}: field \"checker.{unknown[0]}\": not a setting of the checker; its "
                       f"settings are {', '.join(CHECKER_KEYS)}")
    defaults = CheckOptions()
    idempotent = _setting(test, "producer.idempotent", bool, defaults.idempotent, where)
    linearizability = _setting(test, "checker.linearizability", bool, defaults.linearizability, where)
    budget = _setting(test, "checker.search_budget", int, defaults.search_budget, where)
    method = _setting(test, "checker.linear_method", str, defaults.linear_method, where)
    if method not in LINEAR_METHODS:
        raise BadInput(f"{where}: field \"checker.linear_method\": {method!r} is not one of "
                       f"{', '.join(LINEAR_METHODS)}")
    if not 0 < budget <= INT64_MAX:
        raise BadInput(f"{where}: field \"checker.search_budget\": {budget} must be a positive "
                       f"number of states, at most {INT64_MAX} (int64)")
    invalid = _setting(test, "checker.invalid", list, None, where)
    if invalid is None:
        invalid_set = default_invalid(idempotent)
    else:
        unknown = [name for name in invalid if name not in ALL_ANOMALIES]
        if unknown:
            raise BadInput(f"{where}: field \"checker.invalid\": {unknown} are not anomaly names; "
                           f"known: {', '.join(ALL_ANOMALIES)}")
        invalid_set = frozenset(invalid)
    return CheckerSection(CheckOptions(idempotent=idempotent, linearizability=linearizability,
                                       linear_method=method, search_budget=budget), invalid_set)


def _setting(test: dict[str, Any], dotted: str, kind: type, default: Any, where: Path | str) -> Any:
    node: Any = test
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    if node is None:
        return default
    if type(node) is not kind:  # `type is`, so that true is not taken for an int
        raise BadInput(f"{where}: field \"{dotted}\": expected {kind.__name__}, got "
                       f"{orjson.dumps(node).decode()[:80]}")
    return node
