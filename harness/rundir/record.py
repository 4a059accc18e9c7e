"""A run as its files record it: test.json (what was asked, the versions it ran with) and
results.json (the checker's verdict), read into one typed record that serve, the results
index, compare, campaign reports and analyze all read (docs/FORMATS.md).

`read_record(run_dir, strict=...)`: strict readers (compare, replay) stop with a BadInput
naming a file that is not a JSON object; lenient ones (the index, serve) show such a run as
not checked rather than fail the page. Absent files read as empty: a run stopped in setup
has no results.json, a history written by hand no test.json.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fencepost.clusters import default_truncation
from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.names import RESULTS_FILE, TEST_FILE

NO_FAULTS = "none"
# System options that say where the jars came from, not what runs: not part of a configuration.
NOT_A_VARIANT = ("kafka_home", "libs", "scala", "version")
VERDICTS = ("valid", "invalid", "unknown", "not checked")


@dataclass(frozen=True, slots=True)
class Configuration:
    """What a run compares as: its system (with its variant), truncation and faults."""

    system: str  # own, kafka:3.9.1, ...
    variant: str  # `[k=v,...]` of the system options that change what runs; "" for none
    truncation: str
    faults: str  # the nemesis faults as given, "none" for none
    release: str  # the Kafka release that ran (test.json's versions), "own" for the own broker

    @property
    def key(self) -> tuple[str, str, str]:
        """(system with variant, truncation, faults): the unit `fencepost compare` groups by."""
        return self.system + self.variant, self.truncation, self.faults


@dataclass(frozen=True)
class RunRecord:
    run_dir: Path
    test: dict[str, Any] = field(default_factory=dict)  # test.json; {} without one
    results: dict[str, Any] = field(default_factory=dict)  # results.json; {} when not checked

    @property
    def checked(self) -> bool:
        return bool(self.results)

    @property
    def valid(self) -> Any:
        """results.json's `valid`: true, false or "unknown"; None when not checked."""
        return self.results.get("valid")

    @property
    def verdict(self) -> str:
        """valid, invalid, unknown, or `not checked`."""
        return verdict_word(self.valid) if self.checked else "not checked"

    @property
    def anomaly_counts(self) -> dict[str, int]:
        counts = self.results.get("anomaly_counts")
        return {str(k): v for k, v in counts.items() if type(v) is int} if isinstance(counts, dict) else {}

    @property
    def invalid_anomalies(self) -> frozenset[str]:
        names = self.results.get("invalid_anomalies")
        return frozenset(map(str, names)) if isinstance(names, list) else frozenset()

    @property
    def invalidating(self) -> dict[str, int]:
        """Anomaly -> count of those that made the run invalid; {} for a valid run."""
        return {k: v for k, v in self.anomaly_counts.items() if v and k in self.invalid_anomalies}

    @property
    def ops(self) -> int | None:
        checked = self.results.get("checked")
        ops = checked.get("ops") if isinstance(checked, dict) else None
        return ops if type(ops) is int else None

    @property
    def liveness(self) -> dict[str, Any] | None:
        section = self.results.get("liveness")
        return section if isinstance(section, dict) else None

    @property
    def versions(self) -> dict[str, Any]:
        versions = self.test.get("versions")
        return versions if isinstance(versions, dict) else {}

    @property
    def configuration(self) -> Configuration:
        return configuration_of(self.test)


def configuration_of(test: dict[str, Any]) -> Configuration:
    """A run's configuration from its test.json; the run spec's defaults where it says nothing
    (own; kip320 on the own broker, the release's own protocol on stock Kafka; no faults). Runs
    given system options (mode, elr, broker_config, ...) are another configuration of their
    system: its name carries them, `kafka:4.1.1[elr=false]`."""
    system = str(test.get("system") or "own")
    given_nemesis, given_versions = test.get("nemesis"), test.get("versions")
    nemesis: dict[str, Any] = given_nemesis if isinstance(given_nemesis, dict) else {}
    versions: dict[str, Any] = given_versions if isinstance(given_versions, dict) else {}
    release = str(versions.get("kafka") or system.partition(":")[2] or ("own" if system == "own" else ""))
    return Configuration(system, variant(test.get("system_options")),
                         str(test.get("truncation") or default_truncation(system)),
                         str(nemesis.get("faults") or NO_FAULTS).strip() or NO_FAULTS, release)


def variant(options: object) -> str:
    """`[k=v,...]` of the system options that change what runs (sorted; values as JSON, strings
    bare); "" for none. Where the jars came from (kafka_home, libs) is not a variant."""
    if not isinstance(options, dict):
        return ""
    shown = [f"{k}={v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(',', ':'))}"
             for k, v in sorted(options.items()) if k not in NOT_A_VARIANT]
    return f"[{','.join(shown)}]" if shown else ""


def read_record(run_dir: Path, *, strict: bool = True) -> RunRecord:
    run_dir = Path(run_dir)
    return RunRecord(run_dir, read_object(run_dir / TEST_FILE, strict=strict),
                     read_object(run_dir / RESULTS_FILE, strict=strict))


def read_object(path: Path, *, strict: bool = True) -> dict[str, Any]:
    """The JSON object in `path`; {} when there is no such file. A file that is no JSON object:
    BadInput when `strict`, else {}."""
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        if strict:
            raise BadInput(f"{path}: cannot read it as JSON ({e})") from None
        return {}
    if not isinstance(data, dict):
        if strict:
            raise BadInput(f"{path}: expected a JSON object, got {type(data).__name__}")
        return {}
    return data


# --- the words of results.json, as every reader shows them -------------------------------------


def verdict_word(valid: Any) -> str:
    """valid / invalid / unknown, from results.json's `valid` (anything else: unknown)."""
    if valid is True:
        return "valid"
    if valid is False:
        return "invalid"
    return "unknown"


def timings_text(timings: dict[str, float]) -> str:
    """`run to first op 1.7 s, last op to verdict 2.3 s`: a run's timings as fencepost.log's
    verdict line gives them (read back by `logged_timing`)."""
    return ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items())


def logged_timing(text: str, name: str) -> float | None:
    """The seconds of timing `name` in a `timings: ...` list that `timings_text` wrote into
    `text` (fencepost.log); None if it holds none."""
    found = re.search(rf"timings: (?:[^;\n]*?, )?{re.escape(name)} ([0-9.]+) s", text)
    return float(found.group(1)) if found else None


def partition_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def op_indices(ops: Any) -> list[int]:
    """History indices in an anomaly's `ops`: ints, nested in lists, or in dicts
    under index / invoke_index / complete_index; in order, without repeats."""
    found: list[int] = []
    stack = [ops]
    while stack:
        item = stack.pop()
        if type(item) is int and item >= 0:
            found.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(item.get(k) for k in ("complete_index", "invoke_index", "index"))
    return list(dict.fromkeys(found))


def one_line(example: dict[str, Any], limit: int = 110) -> str:
    """An anomaly example in one line: where, then its details in short."""
    where = ""
    if "topic" in example and "partition" in example:
        where = f"{partition_name(example['topic'], example['partition'])} "
    if isinstance(example.get("explanation"), str):
        text = where + str(example["explanation"])
    else:
        details = {k: v for k, v in example.items()
                   if k not in ("type", "topic", "partition", "history", "counterexample")}
        text = where + orjson.dumps(details, default=jsonable,
                                    option=orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def jsonable(value: Any) -> Any:
    """What orjson cannot write by itself, as JSON: sets sorted, bytes decoded, the rest as text."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
