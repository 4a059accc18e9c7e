"""What each run of a campaign should yield, and whether it did: the `[[expect]]` rules of a
campaign file (docs/CAMPAIGNS.md), the one owner of the rule that turns a run's outcome
into a pass, a surprise, an unknown or a crash.

```toml
[[expect]]                  # the first rule a run matches says what it should yield
truncation = "hw"           # match: run settings (dotted for sections), a value or a list of values
verdict = "invalid"         # valid | invalid | unknown, or a list of them (any will do)
[[expect]]
system = "kafka:0.10.2.2"
verdict = ["valid", "invalid"]
liveness = "findings"       # a key of results.json's liveness section that must be non-zero
```

Rules:
1. A run takes the expectation of the first rule whose every match key equals the run's
   setting (a list: any of its values); a run no rule matches should be `valid`, and its
   liveness is not judged. A rule without `verdict` expects `valid`.
2. `liveness = KEY` (or a list of keys, all must hold): the run's results.json `liveness`
   section has a non-zero, non-empty KEY (`findings`: any finding at all). `liveness =
   "none"`: no finding (`findings` is 0). The keys are the liveness section's own, so new
   kinds of finding need no change here.
3. A run's status: `crashed` (it did not finish: always a failure of the campaign);
   `unknown` (no verdict, and `unknown` not expected: a failure only with `unknown_fails`);
   `surprise` (a verdict or liveness other than expected); else `expected`.
4. A run whose durability scenario did not set up its premise (results.json `premise`,
   harness/check/premise.py) keeps its status; its `why` says so, since its verdict tested nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from fencepost.harness.errors import EXIT_CRASH, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput

VERDICTS = ("valid", "invalid", "unknown")
OUTCOME_KEYS = ("verdict", "liveness")
NO_LIVENESS = "none"
STATUSES = ("expected", "surprise", "unknown", "crashed")


@dataclass(frozen=True)
class Expectation:
    verdicts: tuple[str, ...] = ("valid",)
    liveness: tuple[str, ...] = ()  # keys that must be non-zero; ("none",): no finding; (): not judged
    rule: int | None = None  # the [[expect]] rule it came from (1-based); None: the default

    def describe(self) -> str:
        text = " or ".join(self.verdicts)
        if self.liveness:
            text += f", liveness {' and '.join(self.liveness)}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"verdict": list(self.verdicts), "liveness": list(self.liveness), "rule": self.rule}

    @staticmethod
    def from_json(data: Mapping[str, Any] | None) -> Expectation:
        if not data:
            return Expectation()
        return Expectation(tuple(data.get("verdict") or ("valid",)), tuple(data.get("liveness") or ()),
                           data.get("rule"))


@dataclass(frozen=True)
class Rule:
    match: Mapping[str, tuple[Any, ...]]  # dotted setting -> the values it may have
    expectation: Expectation

    def matches(self, spec_json: Mapping[str, Any]) -> bool:
        return all(_setting(spec_json, key) in values for key, values in self.match.items())


def parse_rules(where: str, data: Any) -> tuple[Rule, ...]:
    """`[expect]` (one rule) or `[[expect]]` (rules in order) of a campaign file."""
    if data is None:
        return ()
    tables = [data] if isinstance(data, dict) else data
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise BadInput(f"{where}: expect must be [[expect]] tables of run settings to match and the "
                       "verdict they should yield, e.g. truncation = \"hw\", verdict = \"invalid\"")
    return tuple(_rule(where, n, table) for n, table in enumerate(tables, start=1))


def _rule(where: str, number: int, table: Mapping[str, Any]) -> Rule:
    at = f"{where}: [[expect]] rule {number}"
    verdicts = _strings(at, "verdict", table.get("verdict", "valid"))
    bad = [v for v in verdicts if v not in VERDICTS]
    if bad:
        raise BadInput(f"{at}: verdict = {bad[0]!r}: choose {', '.join(VERDICTS)} (or a list of them)")
    liveness = _strings(at, "liveness", table["liveness"]) if "liveness" in table else ()
    if NO_LIVENESS in liveness and len(liveness) > 1:
        raise BadInput(f"{at}: liveness = {list(liveness)}: \"none\" (no finding) stands alone")
    match = {key: tuple(value) if isinstance(value, list) else (value,)
             for key, value in table.items() if key not in OUTCOME_KEYS}
    if not match:
        raise BadInput(f"{at}: name the runs it is about with run settings, e.g. truncation = \"hw\" "
                       "(a rule for every run: put it last with a setting every run has, e.g. nodes = 3)")
    return Rule(match, Expectation(verdicts, liveness, number))


def _strings(at: str, key: str, value: Any) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str) and v for v in values):
        raise BadInput(f"{at}: {key} = {value!r}: give a word or a list of words")
    return tuple(values)


def check_rules(where: str, rules: Sequence[Rule], specs: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a rule naming a setting no run has, or matching no planned run (a misspelt value)."""
    for rule in rules:
        for key in rule.match:
            if specs and all(_setting(spec, key, missing=_MISSING) is _MISSING for spec in specs):
                raise BadInput(f"{where}: [[expect]] rule {rule.expectation.rule}: {key!r} is not a run setting "
                               "(docs/RUN.md lists them; sections dotted, e.g. \"nemesis.faults\")")
        if specs and not any(rule.matches(spec) for spec in specs):
            match = ", ".join(f"{k} = {list(v) if len(v) > 1 else v[0]!r}" for k, v in rule.match.items())
            raise BadInput(f"{where}: [[expect]] rule {rule.expectation.rule} ({match}) "
                           "matches no run of the campaign: check its values against [base], [matrix] and [[cases]]")


def expectation_for(rules: Sequence[Rule], spec_json: Mapping[str, Any]) -> Expectation:
    """Rule 1: the first matching rule's expectation, else valid."""
    for rule in rules:
        if rule.matches(spec_json):
            return rule.expectation
    return Expectation()


def judge(expected: Expectation, verdict: str, liveness: Mapping[str, Any] | None,
          unknown_fails: bool = False, premise: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(status, why) of a run (rule 3); `why` says what differed, or what was as expected, and
    (rule 4) that a scenario's premise was not met."""
    status, why = _judge(expected, verdict, liveness, unknown_fails)
    unmet = [s for s in (premise or {}).get("scenarios") or () if isinstance(s, Mapping) and s.get("met") is False]
    if unmet and status != "crashed":
        why += f"; premise not met: {unmet[0].get('why', '')}"
    return status, why


def _judge(expected: Expectation, verdict: str, liveness: Mapping[str, Any] | None,
           unknown_fails: bool) -> tuple[str, str]:
    if verdict == "crashed":
        return "crashed", "the run crashed"
    if verdict not in expected.verdicts:
        if verdict == "unknown":
            return ("surprise" if unknown_fails else "unknown"), f"no verdict (expected {expected.describe()})"
        return "surprise", f"expected {' or '.join(expected.verdicts)}, got {verdict}"
    missing = _liveness_unmet(expected.liveness, liveness or {})
    if missing:
        return "surprise", f"{verdict} as expected, but {missing}"
    return "expected", f"{verdict} as expected" + (f", liveness {' and '.join(expected.liveness)}"
                                                  if expected.liveness else "")


def _liveness_unmet(keys: tuple[str, ...], section: Mapping[str, Any]) -> str | None:
    if not keys:
        return None
    if keys == (NO_LIVENESS,):
        found = section.get("findings") or 0
        return f"liveness: {found} finding(s) where none was expected" if found else None
    unmet = [k for k in keys if not _nonzero(section.get(k))]
    return f"liveness: no {', '.join(unmet)} where expected" if unmet else None


def _nonzero(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return bool(value)


_MISSING = object()


def _setting(spec_json: Mapping[str, Any], dotted: str, missing: Any = None) -> Any:
    value: Any = spec_json
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return missing
        value = value[part]
    return value


def judged_again(outcome: dict[str, Any], expected: Expectation, unknown_fails: bool = False) -> dict[str, Any]:
    """The outcome judged by `expected` (the campaign file's expectation now): the same dict when
    neither the expectation nor the status changes, else a copy with `expected`, `status` and
    `why` replaced — a resumed campaign judges every run by the rules it has now."""
    status, why = judge(expected, outcome.get("verdict", "crashed"), outcome.get("liveness"), unknown_fails,
                        outcome.get("premise"))
    if outcome.get("expected") == expected.to_json() and outcome.get("status") == status:
        return outcome
    return {**outcome, "expected": expected.to_json(), "status": status, "why": why}


def status_of(outcome: dict[str, Any], unknown_fails: bool = False) -> str:
    """An outcome's status; one written before expectations existed is judged as expecting valid."""
    if outcome.get("status"):
        return outcome["status"]
    return judge(Expectation.from_json(outcome.get("expected")), outcome.get("verdict", "crashed"),
                 outcome.get("liveness"), unknown_fails)[0]


def campaign_exit_code(statuses: Iterable[tuple[str, Any]]) -> int:
    """A campaign's exit code from its runs' (status, verdict) pairs (docs/FORMATS.md, exit
    codes): 255 if any run crashed, else 2 if a surprise was an unknown verdict, else 1 if any
    run was a surprise, else 0."""
    pairs = list(statuses)
    if any(status == "crashed" for status, _ in pairs):
        return EXIT_CRASH
    if any(status == "surprise" and verdict == "unknown" for status, verdict in pairs):
        return EXIT_UNKNOWN
    if any(status == "surprise" for status, _ in pairs):
        return EXIT_INVALID
    return EXIT_VALID
