"""A campaign file and the runs it stands for (DESIGN.md §4.6).

```toml
name = "truncation"          # the campaign's folder: RESULTS/campaigns/<name>/
[base]                       # any run setting, as in a run's TOML (docs/RUN.md)
time_limit = 30
[matrix]                     # every combination of these, in this order, is one run
truncation = ["hw", "kip320"]
"nemesis.faults" = ["leader-bounce", "kill"]
seed = [1, 2, 3]
[[cases]]                    # optional: each case is combined with the whole matrix
system = "kafka:3.9.1"
[[cases]]
system = "own"
```

Matrix and case keys are run settings (dotted for sections, e.g. `"nemesis.faults"`); each
run's spec is `build_spec(base, {key: value, ...})`, so a bad combination is refused
before anything starts. A run's id names its folder and is stable across `--resume`:
its position and its matrix values.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from harness.errors import BadInput
from harness.run.spec import TestSpec, build_spec, load_toml

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]+")


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    settings: Mapping[str, Any]  # the matrix values of this run
    spec: TestSpec


@dataclass(frozen=True)
class Campaign:
    name: str
    source: Path
    runs: tuple[PlannedRun, ...]


def load_campaign(path: Path) -> Campaign:
    data = load_toml(path)
    unknown = sorted(set(data) - {"name", "base", "matrix", "cases"})
    if unknown:
        raise BadInput(f"{path}: unknown key {unknown[0]!r}: a campaign file has name, [base], [matrix] "
                       "and [[cases]]")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise BadInput(f"{path}: name = {name!r}: give a folder name (letters, digits, '_', '.', '-')")
    base = data.get("base", {})
    matrix = data.get("matrix", {})
    if not isinstance(base, dict) or not isinstance(matrix, dict):
        raise BadInput(f"{path}: [base] and [matrix] must be tables")
    for key, values in matrix.items():
        if not isinstance(values, list) or not values:
            raise BadInput(f"{path}: matrix.{key} = {values!r}: give a non-empty list of values")
    cases = data.get("cases", [{}])
    if not isinstance(cases, list) or not cases or not all(isinstance(c, dict) for c in cases):
        raise BadInput(f"{path}: cases must be [[cases]] tables of run settings")
    return Campaign(name, path, tuple(plan_runs(path, base, matrix, cases)))


def plan_runs(path: Path, base: Mapping[str, Any], matrix: Mapping[str, list[Any]],
              cases: list[Mapping[str, Any]] = ({},)) -> list[PlannedRun]:
    keys = list(matrix)
    combinations = [{**case, **dict(zip(keys, values))}
                    for case in cases for values in itertools.product(*(matrix[k] for k in keys))]
    runs = []
    for number, settings in enumerate(combinations, start=1):
        run_id = f"{number:04d}" + "".join(f"_{_slug(k)}={_slug(v)}" for k, v in settings.items())
        try:
            spec = build_spec(base, {**settings, "name": "run"})
        except BadInput as e:
            raise BadInput(f"{path}: run {run_id}: {e}") from None
        runs.append(PlannedRun(run_id[:120], settings, spec))
    return runs


def _slug(value: Any) -> str:
    return UNSAFE.sub("-", str(value)).strip("-") or "x"
