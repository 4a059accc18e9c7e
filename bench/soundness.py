"""Soundness figures of the checkers: how many planted anomalies they catch, and
how often they cry wolf on valid histories. Prints figures, asserts no time.

Planted runs: for every anomaly name of `checkers.anomaly.ALL`, `--per-type`
runs (default 1,000) in which one of that name's planters
(`tests.support.synth.plant.PLANTERS`, taken in turn) planted it into a small valid
generated history. Each run has its own seed, which fixes the generator's
configuration (a few hundred lines; idempotent or not, 1-4 partitions, 1-3
consumers, in one consumer group committing offsets or not, crashes, kills, offset gaps,
stale and lagging followers: see `config_for`) and the planter's choices. A run is checked as `fencepost check`
checks it (written to a run directory, `load_run`, `check_partitions`,
`decide`, with test.json's default checker options unless `--checker` says
otherwise). Detected: the checker reported that anomaly in the planted
partition (for `unseen` and `duplicate`, which a valid history may hold
already, it must name the planted value). A planter that finds nothing to
work on (`CannotPlant`) skips the run: skips are counted, and more seeds are
tried until each type has its planted runs. The verdict is checked too:
invalid exactly when the planted name is in the run's invalid set.

Clean runs: `--clean` generated histories (default 1,000), unplanted. A false
positive is a clean run whose verdict is not `valid`. Beyond the verdict, the
anomalies found are compared with the generator's ground truth: a value is a
`duplicate` exactly when the truth puts it at more than one final offset, an
`unseen` exactly when it was acked and no ok poll returned it; any other
anomaly name, or a difference in those two sets, is a ground-truth mismatch.

Exit 0 when every rate is 100% and nothing else was found, 1 on a miss, a
wrong verdict, a false positive or a mismatch (each printed with the command
that reproduces it: `--only PLANTER --seed S`, or `--only clean --seed S`),
255 if a case crashed the checker or the bench, 254 for bad arguments.

Measured on the shared 2-CPU development machine (a chaos campaign running
beside it), jobs 2, 1,000 planted runs per type and 1,000 clean runs:
  `python bench/soundness.py` (the default checker: witness, then search):
    every one of the 15 types detected in 100% of its planted runs (15,024
    planted, 77 skipped by CannotPlant, 0 wrong verdicts); clean: 0 false
    positives, 0 ground-truth mismatches; 16,101 runs in 143 s.
  `python bench/soundness.py --checker 'linear_method="search"' --base-seed 1000001`
    (the full search always, other seeds): the same, 100% everywhere (15,027
    planted, 88 skipped), 0 false positives, 0 mismatches; 16,115 runs in 193 s.
  `python bench/soundness.py --per-type 200 --clean 300 --lines 1500-3000 --base-seed 5000001`
    (larger runs): 100% everywhere (3,003 planted, 6 skipped), 0 false
    positives, 0 mismatches; 3,309 runs in 201 s.
Of 200 clean runs, 58 hold duplicates (non-idempotent retries) and 135 unseen
values: the ground-truth comparison is not vacuous.

Usage: python bench/soundness.py [--per-type N] [--clean N] [--jobs N]
         [--only NAME[,NAME...]] [--seed S] [--base-seed B]
         [--checker KEY=VALUE ...] [--lines MIN-MAX] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fencepost.checkers import anomaly as A  # noqa: E402
from fencepost.harness.check.checking import check_partitions  # noqa: E402
from fencepost.harness.check.loading import load_run  # noqa: E402
from fencepost.harness.check.verdict import decide  # noqa: E402
from fencepost.harness.errors import BadInput  # noqa: E402
from fencepost.harness.rundir.recorded_test import checker_section  # noqa: E402
from tests.support.synth.generate import GenConfig, generate  # noqa: E402
from tests.support.synth.plant import PLANTERS, CannotPlant, plant  # noqa: E402
from tests.support.synth.run import SynthRun  # noqa: E402

EXIT_OK, EXIT_FINDING, EXIT_BAD_ARGS, EXIT_CRASH = 0, 1, 254, 255
CLEAN = "clean"
# Names a valid generated history may hold already: a planted one must be matched by value.
MATCH_BY_VALUE = frozenset({A.UNSEEN, A.DUPLICATE})
MAX_TOP_UP_ROUNDS = 6
FINDINGS_SHOWN = 25
DEFAULT_LINES = (250, 550)  # history lines of a generated run: small, so the bench takes minutes
# Temporary run directories go to memory when it can be had.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


@dataclass(frozen=True, slots=True)
class Case:
    seed: int
    planter: str | None  # None: a clean run
    checker: tuple[tuple[str, Any], ...] = ()  # test.json "checker" settings
    lines: tuple[int, int] = DEFAULT_LINES


@dataclass(slots=True)
class CaseResult:
    case: Case
    skipped: str | None = None  # CannotPlant's reason
    crashed: str | None = None  # a traceback
    detected: bool = False
    valid: Any = True  # the verdict: True, False or "unknown"
    expected_valid: bool = True
    partition: int | None = None
    found: dict[str, list[str]] = field(default_factory=dict)  # partition -> anomaly names
    mismatches: list[str] = field(default_factory=list)  # clean: differences from the truth
    story: str = ""

    @property
    def wrong_verdict(self) -> bool:
        return self.skipped is None and self.crashed is None and self.valid != self.expected_valid


def config_for(seed: int, lines: tuple[int, int] = DEFAULT_LINES) -> GenConfig:
    """The generator's configuration of one case: small, plantable runs whose
    shape varies with the seed (history lines drawn from `lines`)."""
    r = random.Random(f"soundness-config-{seed}")
    return GenConfig(
        seed=seed,
        lines=r.randint(*lines),
        partitions=r.randint(1, 4),
        producers=r.randint(2, 10),
        consumers=r.randint(1, 3),
        nodes=r.randint(2, 4),
        idempotent=r.random() < 0.5,
        p_fail=r.choice([0.0, 0.03, 0.15]),
        p_info_unappended=r.choice([0.0, 0.02, 0.1]),
        p_info_acklost=r.choice([0.0, 0.02, 0.1]),
        p_timeout_appended=r.choice([0.0, 0.01, 0.05]),
        p_retry_dup=r.choice([0.0, 0.05, 0.2]),
        p_offset_gap=r.choice([0.0, 0.0, 0.05]),
        nemesis_rate=r.choice([0.0, 0.02, 0.05]),
        p_kill=r.choice([0.3, 0.8, 1.0]),
        consumer_share=r.choice([0.35, 0.5]),
        poll_batch=r.randint(4, 20),
        p_crash=r.choice([0.0, 0.01, 0.05]),
        p_reassign=r.choice([0.0, 0.02, 0.08]),
        dangling=r.random() < 0.3,
        uncommitted_tail=r.random() < 0.5,
        lagging_follower=r.random() < 0.5,
        stale_follower=r.random() < 0.5,
        group=r.random() < 0.5,  # consumers in one group: commits and resumes (drawn last: the
    )                            # draws above stay those of the seeds measured before it


# --- one case, in a worker process ------------------------------------------------


def run_case(case: Case) -> CaseResult:
    try:
        return _run_case(case)
    except Exception:  # a finding to report with its seed, not a reason to stop the others
        return CaseResult(case, crashed=traceback.format_exc())


def _run_case(case: Case) -> CaseResult:
    run = generate(config_for(case.seed, case.lines))
    result = CaseResult(case)
    planted = None
    if case.planter is not None:
        try:
            planted = plant(case.planter, run, random.Random(case.seed))
        except CannotPlant as e:
            return CaseResult(case, skipped=str(e))
        run = planted.run
        result.partition = planted.partition
        result.story = planted.details.get("story", "")
    if case.checker:
        run.test.setdefault("checker", {}).update(dict(case.checker))
    reports, loaded, verdict = _check(run)
    found: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for report in reports:
        for anomaly in report.anomalies:
            found[report.partition][anomaly.name].append(anomaly)
    result.found = {str(p): sorted(names) for p, names in sorted(found.items())}
    result.valid = verdict.valid
    if planted is not None:
        mine = found.get(planted.partition, {}).get(planted.anomaly, [])
        if planted.anomaly in MATCH_BY_VALUE:
            mine = [a for a in mine if a.details.get("value") == planted.details["value"]]
        result.detected = bool(mine)
        result.expected_valid = planted.anomaly not in loaded.invalid_anomalies
    else:
        result.mismatches = truth_mismatches(run, found)
    return result


def _check(run: SynthRun):
    with tempfile.TemporaryDirectory(prefix="fencepost-soundness-", dir=SCRATCH) as tmp:
        run.write(Path(tmp))
        loaded = load_run(Path(tmp))
        reports = check_partitions(loaded, jobs=1)
        return reports, loaded, decide(loaded, reports)


def truth_mismatches(run: SynthRun, found: dict[int, dict[str, list]]) -> list[str]:
    """How the anomalies found in a clean run differ from what the generator's
    ground truth (and, for `unseen`, the history's polls) says is there."""
    truth = run.truth
    expected: dict[str, dict[int, set[str]]] = {A.DUPLICATE: defaultdict(set), A.UNSEEN: defaultdict(set)}
    for s in truth.sends.values():
        if len(s.final_offsets) > 1:
            expected[A.DUPLICATE][s.partition].add(s.value)
    polled = {(r["partition"], r["value"]) for line in run.history
              if line["f"] == "poll" and line["type"] == "ok" for r in line["value"]["records"]}
    for s in truth.acked():
        if (s.partition, s.value) not in polled:
            expected[A.UNSEEN][s.partition].add(s.value)
    out = []
    for p in sorted(set(found) | set(run.final)):
        names = found.get(p, {})
        for name in sorted(set(names) - set(expected)):
            out.append(f"partition {p}: {len(names[name])} unexpected {name}")
        for name, by_partition in expected.items():
            got = {a.details.get("value") for a in names.get(name, [])}
            want = by_partition.get(p, set())
            if got != want:
                out.append(f"partition {p}: {name} found for {sorted(got - want)[:5]}, "
                           f"missed for {sorted(want - got)[:5]} (ground truth: {len(want)})")
    return out


# --- the cases, run in a pool ------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """What the main process has learned so far."""

    planted: Counter = field(default_factory=Counter)  # by anomaly
    detected: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    wrong_verdict: Counter = field(default_factory=Counter)
    by_planter: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    skip_reasons: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    clean: int = 0
    false_positives: int = 0
    mismatched: int = 0
    findings: list[CaseResult] = field(default_factory=list)
    crashes: list[CaseResult] = field(default_factory=list)
    done: int = 0

    def add(self, r: CaseResult) -> None:
        self.done += 1
        if r.crashed is not None:
            self.crashes.append(r)
            return
        if r.case.planter is None:
            self.clean += 1
            self.false_positives += r.valid is not True
            self.mismatched += bool(r.mismatches)
            if r.valid is not True or r.mismatches:
                self.findings.append(r)
            return
        name = PLANTERS[r.case.planter].anomaly
        per = self.by_planter[r.case.planter]
        if r.skipped is not None:
            self.skipped[name] += 1
            per["skipped"] += 1
            self.skip_reasons[r.case.planter][r.skipped] += 1
            return
        self.planted[name] += 1
        self.detected[name] += r.detected
        self.wrong_verdict[name] += r.wrong_verdict
        per["planted"] += 1
        per["detected"] += r.detected
        if not r.detected or r.wrong_verdict:
            self.findings.append(r)


class Progress:
    """One live status line on stderr, redrawn at most every 0.2 s."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.started = time.perf_counter()
        self.last = 0.0

    def show(self, tally: Tally, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        elapsed = now - self.started
        rate = tally.done / elapsed if elapsed else 0.0
        eta = (self.total - tally.done) / rate if rate else 0.0
        misses = sum(tally.planted.values()) - sum(tally.detected.values())
        print(f"\rsoundness: {tally.done}/{self.total} runs, planted {sum(tally.planted.values())}, "
              f"skipped {sum(tally.skipped.values())}, misses {misses}, clean {tally.clean}, "
              f"false positives {tally.false_positives}, {elapsed:.0f} s (eta {eta:.0f} s) ",
              end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        print(file=sys.stderr, flush=True)


def run_cases(cases: list[Case], jobs: int, tally: Tally, progress: Progress) -> None:
    if jobs <= 1 or len(cases) <= 1:
        for case in cases:
            tally.add(run_case(case))
            progress.show(tally)
        return
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for result in pool.imap_unordered(run_case, cases, chunksize=4):
            tally.add(result)
            progress.show(tally)


def planters_by_anomaly(only: set[str] | None) -> dict[str, list[str]]:
    """Anomaly name -> the names of its planters (those `only` selects), in
    the order of `checkers.anomaly.ALL`."""
    out: dict[str, list[str]] = {}
    for name in A.ALL:
        planters = sorted(p for p, planter in PLANTERS.items() if planter.anomaly == name
                          and (only is None or p in only or name in only))
        if planters:
            out[name] = planters
    return out


def campaign(args: argparse.Namespace, types: dict[str, list[str]], clean: int,
             checker: tuple, tally: Tally) -> None:
    """All cases: `--per-type` planted runs of each type (topped up with fresh
    seeds while planters skip), and `clean` clean runs."""
    seeds = iter(range(args.base_seed, args.base_seed + 10**12))
    attempts: Counter = Counter()

    def planted_cases(name: str, n: int) -> Iterator[Case]:
        for _ in range(n):
            planter = types[name][attempts[name] % len(types[name])]
            attempts[name] += 1
            yield Case(next(seeds), planter, checker, args.lines)

    first = [case for name in types for case in planted_cases(name, args.per_type)]
    cases = _interleave(first, [Case(next(seeds), None, checker, args.lines) for _ in range(clean)])
    progress = Progress(len(cases))
    run_cases(cases, args.jobs, tally, progress)
    for _ in range(MAX_TOP_UP_ROUNDS):
        short = {name: args.per_type - tally.planted[name] for name in types
                 if tally.planted[name] < args.per_type}
        if not short:
            break
        more = []
        for name, missing in short.items():
            tried = tally.planted[name] + tally.skipped[name]
            success = tally.planted[name] / tried if tried else 0.0
            more += planted_cases(name, math.ceil(missing / max(success, 0.05) * 1.2) + 1)
        progress.total += len(more)
        run_cases(more, args.jobs, tally, progress)
    progress.show(tally, force=True)
    progress.done()


def _interleave(a: list[Case], b: list[Case]) -> list[Case]:
    """Cases of both lists spread evenly, so the progress line is representative."""
    merged = [(i / len(a), case) for i, case in enumerate(a)] + [(i / len(b), case) for i, case in enumerate(b)]
    return [case for _, case in sorted(merged, key=lambda x: x[0])]


# --- output --------------------------------------------------------------------------


def print_table(types: dict[str, list[str]], tally: Tally, with_clean: bool, out=sys.stdout) -> None:
    header = f"{'anomaly':<24}{'planted':>9}{'detected':>10}{'rate':>9}{'skipped':>9}{'wrong verdict':>15}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for name in types:
        planted, detected = tally.planted[name], tally.detected[name]
        print(f"{name:<24}{planted:>9}{detected:>10}{_rate(detected, planted):>9}"
              f"{tally.skipped[name]:>9}{tally.wrong_verdict[name]:>15}", file=out)
    print(file=out)
    print(f"{'planter':<30}{'planted':>9}{'detected':>10}{'skipped':>9}", file=out)
    for planter in (p for name in types for p in types[name]):
        c = tally.by_planter[planter]
        print(f"{planter:<30}{c['planted']:>9}{c['detected']:>10}{c['skipped']:>9}", file=out)
    if with_clean:
        print(file=out)
        print(f"clean: runs {tally.clean}, false positives {tally.false_positives} "
              f"(verdict not valid), ground-truth mismatches {tally.mismatched} "
              f"(an anomaly the generator's truth says is not there, or a missed duplicate/unseen)",
              file=out)


def _rate(n: int, of: int) -> str:
    return f"{100.0 * n / of:.1f}%" if of else "-"


def repro_command(r: CaseResult) -> str:
    only = r.case.planter or CLEAN
    extra = "".join(f" --checker {k}={json.dumps(v)}" for k, v in r.case.checker)
    if r.case.lines != DEFAULT_LINES:
        extra += f" --lines {r.case.lines[0]}-{r.case.lines[1]}"
    return f"python bench/soundness.py --only {only} --seed {r.case.seed}{extra}"


def print_findings(tally: Tally, out=sys.stdout) -> None:
    for title, results in (("crashed", tally.crashes), ("findings", tally.findings)):
        if not results:
            continue
        print(f"\n{title} ({len(results)}; the first {min(len(results), FINDINGS_SHOWN)}):", file=out)
        for r in sorted(results, key=lambda r: (r.case.planter or "", r.case.seed))[:FINDINGS_SHOWN]:
            print(f"  {repro_command(r)}", file=out)
            if r.crashed:
                print("    " + r.crashed.strip().splitlines()[-1], file=out)
                continue
            if r.case.planter:
                what = []
                if not r.detected:
                    what.append(f"missed {PLANTERS[r.case.planter].anomaly} in partition {r.partition}")
                if r.wrong_verdict:
                    what.append(f"verdict {r.valid}, expected {r.expected_valid}")
                print(f"    {'; '.join(what)}; planted: {r.story}", file=out)
            else:
                print(f"    verdict {r.valid}; " + "; ".join(r.mismatches[:4]), file=out)
            print(f"    found: {r.found}", file=out)


def print_skips(tally: Tally, out=sys.stdout) -> None:
    for planter, reasons in sorted(tally.skip_reasons.items()):
        common = "; ".join(f"{n}x {why}" for why, n in reasons.most_common(2))
        print(f"  skipped {planter}: {common}", file=out)


def figures(types: dict[str, list[str]], tally: Tally, seconds: float, args) -> dict[str, Any]:
    return {
        "per_type": args.per_type, "clean_requested": args.clean, "jobs": args.jobs,
        "seconds": round(seconds, 1),
        "anomalies": {name: {"planted": tally.planted[name], "detected": tally.detected[name],
                             "skipped": tally.skipped[name], "wrong_verdict": tally.wrong_verdict[name]}
                      for name in types},
        "planters": {p: dict(tally.by_planter[p]) for name in types for p in types[name]},
        "clean": {"runs": tally.clean, "false_positives": tally.false_positives,
                  "ground_truth_mismatches": tally.mismatched},
        "findings": [repro_command(r) for r in tally.findings],
        "crashed": [repro_command(r) for r in tally.crashes],
    }


# --- the command line -------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Bad arguments exit 254 (docs/FORMATS.md, exit codes), not argparse's 2."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_ARGS, f"{self.prog}: bad arguments: {message}\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-type", type=int, default=1000,
                        help="planted runs per anomaly type (default 1000)")
    parser.add_argument("--clean", type=int, default=1000, help="clean runs (default 1000)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: one per CPU)")
    parser.add_argument("--only", default=None,
                        help="comma-separated planter names, anomaly names, or 'clean': run only "
                             "those (clean runs only if 'clean' is named)")
    parser.add_argument("--seed", type=int, default=None,
                        help="run exactly one case of each selected planter (and one clean run) "
                             "with this seed: reproduces a finding")
    parser.add_argument("--base-seed", type=int, default=1, help="first seed of the campaign (default 1)")
    parser.add_argument("--checker", action="append", default=[], metavar="KEY=VALUE",
                        help="a test.json checker setting for every run, VALUE in JSON "
                             "(e.g. linearizability=false, linear_method=\"search\")")
    parser.add_argument("--lines", type=_line_range, default=DEFAULT_LINES, metavar="MIN-MAX",
                        help=f"history lines of a generated run (default "
                             f"{DEFAULT_LINES[0]}-{DEFAULT_LINES[1]})")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: 1 planted run per type and 3 clean runs (the campaign's top-ups, "
                             "table and --json file, into a temporary folder, as usual); covers every line "
                             "printed and the exit code's rules, not the rates' worth")
    args = parser.parse_args(argv)
    if args.smoke:
        args.per_type, args.clean = 1, 3
    for flag in ("per_type", "clean"):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')} {getattr(args, flag)}: give a count >= 0")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give at least 1 worker process")
    return args


def _line_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    try:
        bounds = (int(low), int(high if sep else low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN-MAX, e.g. 250-550") from None
    if not 20 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: give 20 <= MIN <= MAX")
    return bounds


def checker_settings(pairs: Iterable[str]) -> tuple[tuple[str, Any], ...]:
    """--checker KEY=VALUE pairs, checked the way test.json is (BadInput if wrong)."""
    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--checker {pair!r}: expected KEY=VALUE, e.g. linearizability=false")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            raise BadInput(f"--checker {pair!r}: VALUE {raw!r} is not JSON; quote strings, "
                           f"e.g. linear_method='\"search\"'") from None
    checker_section({"checker": out}, "--checker")
    return tuple(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = None if args.only is None else {name.strip() for name in args.only.split(",") if name.strip()}
    if only is not None:
        unknown = only - set(PLANTERS) - set(A.ALL) - {CLEAN}
        if unknown:
            print(f"--only: {sorted(unknown)} are neither planters nor anomaly names; planters: "
                  f"{', '.join(sorted(PLANTERS))}; anomalies: {', '.join(A.ALL)}; or {CLEAN}",
                  file=sys.stderr)
            return EXIT_BAD_ARGS
    try:
        checker = checker_settings(args.checker)
    except BadInput as e:
        print(f"bad arguments: {e}", file=sys.stderr)
        return EXIT_BAD_ARGS
    types = planters_by_anomaly(only) if only is None or only - {CLEAN} else {}
    with_clean = only is None or CLEAN in only
    tally = Tally()
    started = time.perf_counter()
    if args.seed is not None:
        cases = [Case(args.seed, p, checker, args.lines) for name in types for p in types[name]]
        cases += [Case(args.seed, None, checker, args.lines)] if with_clean else []
        progress = Progress(len(cases))
        run_cases(cases, args.jobs, tally, progress)
        progress.done()
    else:
        campaign(args, types, args.clean if with_clean else 0, checker, tally)
    seconds = time.perf_counter() - started

    print_table(types, tally, with_clean)
    if sum(tally.skipped.values()):
        print(f"\nskipped (CannotPlant): {sum(tally.skipped.values())} runs", file=sys.stdout)
        print_skips(tally)
    short = [name for name in types if args.seed is None and tally.planted[name] < args.per_type]
    if short:
        print(f"\nshort of {args.per_type} planted runs (the planters kept skipping): {', '.join(short)}")
    print_findings(tally)
    print(f"\nwall time {seconds:.1f} s, {tally.done} runs, jobs {args.jobs}"
          + (f", checker settings {dict(checker)}" if checker else ""))
    if args.json:
        args.json.write_text(json.dumps(figures(types, tally, seconds, args), indent=2) + "\n")
    elif args.smoke:  # the --json document made and read back, in a temporary folder
        with tempfile.TemporaryDirectory(prefix="fp-soundness-smoke-") as folder:
            path = Path(folder) / "figures.json"
            path.write_text(json.dumps(figures(types, tally, seconds, args), indent=2) + "\n")
            print(f"--json document: {len(json.loads(path.read_text()))} top-level keys")
    if tally.crashes:
        return EXIT_CRASH
    return EXIT_FINDING if tally.findings else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
