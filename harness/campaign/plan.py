"""A campaign file and the runs it stands for (docs/CAMPAIGNS.md).

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
[[expect]]                   # optional: what runs should yield (harness/campaign/expect.py)
truncation = "hw"
verdict = "invalid"
```

`baseline = "own:kip320"` (optional, top level) names the configuration the report tests
every row of a fault group against (Fisher's exact test, as `fencepost compare --baseline`).

Matrix, case and base keys are run settings (dotted for sections, e.g. `"nemesis.faults"`); each
run's spec is `build_spec(base, {key: value, ...})`, so a bad combination is refused
before anything starts. A run's id names its folder and is stable across `--resume`:
its position and its matrix values.

A shard `I/N` (`fencepost campaign --shard I/N`) is the runs at positions I, I+N, I+2N, ...
(1-based): N machines running shards 1..N run every run once, and a configuration's seeds
spread over the shards.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from fencepost.harness.campaign.expect import Expectation, check_rules, expectation_for, parse_rules
from fencepost.harness.errors import BadInput
from fencepost.harness.run.spec import MAX_NAME, TestSpec, build_spec, load_toml, name_problem

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]+")


TOP_KEYS = ("name", "base", "matrix", "cases", "expect", "baseline")


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    settings: Mapping[str, Any]  # the matrix values of this run
    spec: TestSpec
    expected: Expectation = Expectation()
    number: int = 0  # 1-based position in the whole plan


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @staticmethod
    def parse(text: str) -> Shard:
        head, slash, tail = text.partition("/")
        try:
            index, count = int(head), int(tail)
        except ValueError:
            index = count = 0
        if not slash or not 1 <= index <= count:
            raise BadInput(f"--shard {text!r}: give I/N with 1 <= I <= N, e.g. --shard 2/4 (this machine runs "
                           "the second quarter of the runs)")
        return Shard(index, count)

    def holds(self, number: int) -> bool:
        return (number - 1) % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Campaign:
    name: str
    source: Path
    runs: tuple[PlannedRun, ...]  # the whole plan
    baseline: str | None = None
    shard: Shard | None = None

    @property
    def share(self) -> tuple[PlannedRun, ...]:
        """The runs this machine runs: the whole plan, or the shard's part of it."""
        if self.shard is None:
            return self.runs
        return tuple(r for r in self.runs if self.shard.holds(r.number))

    def sharded(self, shard: Shard | None) -> Campaign:
        return Campaign(self.name, self.source, self.runs, self.baseline, shard)


def load_campaign(path: Path) -> Campaign:
    data = load_toml(path)
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise BadInput(f"{path}: unknown key {unknown[0]!r}: a campaign file has name, baseline, [base], "
                       "[matrix], [[cases]] and [[expect]]")
    name = data.get("name", path.stem)
    valid_form = isinstance(name, str) and NAME.fullmatch(name) is not None
    problem = name_problem(name) if valid_form else (
        f"give a folder name: letters, digits, '_', '.' and '-', starting with a letter or digit, at most "
        f"{MAX_NAME} characters")
    if problem is not None:
        key = "name" if "name" in data else "name (the file's own name, as it sets none)"
        shown = repr(name) if len(repr(name)) <= 60 else f"{repr(name)[:57]}...' ({len(name)} characters)"
        raise BadInput(f"{path}: {key} = {shown}: {problem} (a campaign's runs go in RESULTS/campaigns/NAME/)")
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
    baseline = data.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
        raise BadInput(f"{path}: baseline = {baseline!r}: name a configuration SYSTEM[:TRUNCATION], e.g. own:kip320")
    rules = parse_rules(str(path), data.get("expect"))
    runs = plan_runs(path, base, matrix, cases)
    specs = [run.spec.to_json() for run in runs]
    check_rules(str(path), rules, specs)
    runs = [replace(run, expected=expectation_for(rules, spec)) for run, spec in zip(runs, specs)]
    return Campaign(name, path, tuple(runs), baseline.strip() if baseline else None)


def plan_runs(path: Path, base: Mapping[str, Any], matrix: Mapping[str, list[Any]],
              cases: Sequence[Mapping[str, Any]] = ({},)) -> list[PlannedRun]:
    keys = list(matrix)
    # A dotted key in [base] ("clients.producer") means what it means in a case or the matrix.
    dotted = {k: v for k, v in base.items() if "." in k}
    base = {k: v for k, v in base.items() if k not in dotted}
    combinations = [{**case, **dict(zip(keys, values))}
                    for case in cases for values in itertools.product(*(matrix[k] for k in keys))]
    runs = []
    for number, settings in enumerate(combinations, start=1):
        run_id = f"{number:04d}" + "".join(f"_{_slug(k)}={_slug(v)}" for k, v in settings.items())
        try:
            spec = build_spec(base, {**dotted, **settings, "name": "run"})
        except BadInput as e:
            raise BadInput(f"{path}: run {run_id}: {e}") from None
        runs.append(PlannedRun(run_id[:120], settings, spec, number=number))
    return runs


def _slug(value: Any) -> str:
    return UNSAFE.sub("-", str(value)).strip("-") or "x"
