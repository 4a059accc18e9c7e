"""results.json (docs/CHECKERS.md) and the summary `fencepost check` prints.

results.json: `valid`, `anomaly_counts` (every anomaly found), `anomalies`
(up to 20 examples per name, each with the history lines of the ops it names),
`stats`, `checked` {ops, partitions, seconds} — the contract — plus `reasons`
(why unknown), `not_conclusive` (invalid-set anomalies in partitions not fully
read), `invalid_anomalies` (the names that make this run invalid), `errors`,
`warnings`, `liveness` (harness/check/liveness.py), `premise` (harness/check/premise.py) and
`linearizability` (per partition).
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO

import orjson

from fencepost.checkers.check import PartitionReport
from fencepost.harness.check.liveness import describe as describe_liveness
from fencepost.harness.check.liveness import liveness
from fencepost.harness.check.loading import LoadedRun
from fencepost.harness.check.premise import describe as describe_premise
from fencepost.harness.check.premise import premise
from fencepost.harness.check.verdict import Verdict
from fencepost.harness.errors import BadInput, printable
from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.history import lines_at
from fencepost.harness.rundir.names import HISTORY_FILE, RESULTS_FILE
from fencepost.harness.rundir.record import jsonable as _jsonable
from fencepost.harness.rundir.record import one_line, op_indices, partition_name, verdict_word

EXAMPLES_PER_ANOMALY = 20
OPS_PER_EXAMPLE = 12


def build_results(run: LoadedRun, reports: list[PartitionReport], verdict: Verdict,
                  seconds: float, linear_files: dict[str, str],
                  liveness_section: dict[str, Any] | None = None) -> dict[str, Any]:
    """The results.json document. `linear_files`: partition name -> path of its
    counterexample page, relative to the run directory; `liveness_section`: the liveness
    section if made already (harness/check/liveness.py), else made here."""
    counts: dict[str, int] = defaultdict(int)
    examples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for report in reports:
        for anomaly in report.anomalies:
            counts[anomaly.name] += 1
            if len(examples[anomaly.name]) < EXAMPLES_PER_ANOMALY:
                examples[anomaly.name].append(anomaly.to_json())
    _attach_ops(run.run_dir / HISTORY_FILE, examples)
    by_partition = {partition_name(r.topic, r.partition): r.stats for r in reports}
    return {
        "valid": verdict.valid,
        "anomaly_counts": dict(sorted(counts.items())),
        "anomalies": dict(sorted(examples.items())),
        "stats": {
            "totals": _totals(by_partition.values()),
            "partitions": by_partition,
            "history": {"lines": run.counts.lines, "ops": run.counts.ops,
                        "nemesis_ops": run.counts.nemesis, "by_f": run.counts.by_f_type},
            "final_lines": run.counts.final_lines,
        },
        "checked": {"ops": run.counts.ops, "partitions": len(reports), "seconds": round(seconds, 3)},
        "reasons": verdict.reasons,
        "not_conclusive": dict(sorted(verdict.not_conclusive.items())),
        "invalid_anomalies": sorted(run.invalid_anomalies),
        "errors": run.errors,
        "warnings": run.warnings,
        "liveness": liveness_section if liveness_section is not None else liveness(run.run_dir, run.test),
        "premise": premise(run.run_dir),
        "linearizability": {
            partition_name(r.topic, r.partition): {
                "linearizable": r.linearizable,
                "explored": r.linear_explored,
                "method": r.linear_method,
                "counterexample_file": linear_files.get(partition_name(r.topic, r.partition)),
            } for r in reports},
    }


def write_results(run_dir: Path, results: dict[str, Any]) -> Path:
    """Write results.json atomically (a reader never sees half a file)."""
    path = run_dir / RESULTS_FILE
    try:
        write_atomically(path, to_json(results))
    except OSError as e:
        raise BadInput(f"cannot write {path}: {e.strerror or e}; make the run directory "
                       f"writable, or check with --no-write") from e
    return path


def to_json(document: Any) -> bytes:
    return orjson.dumps(document, default=_jsonable,
                        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)


def print_summary(results: dict[str, Any], out: TextIO, results_path: Path | None,
                  run_dir: Path | None = None) -> None:
    """A table (anomaly, count, one example on one line), the verdict, where results are; every
    line escaped (errors.printable: the examples and input errors quote the run's files)."""

    def say(line: str) -> None:
        print(printable(line, newlines=False), file=out)

    counts = results["anomaly_counts"]
    if counts:
        width = max(len("anomaly"), *(len(name) for name in counts))
        say(f"{'anomaly':<{width}}  {'count':>7}  example")
        for name, n in counts.items():
            example = results["anomalies"].get(name, [{}])[0]
            say(f"{name:<{width}}  {n:>7}  {one_line(example)}")
    else:
        say("no anomalies found")
    errors, warnings = len(results["errors"]), len(results["warnings"])
    if errors or warnings:
        say(f"input problems: {errors} error(s), {warnings} warning(s) (see results.json)")
        for line in results["errors"][:3]:
            say(f"  error: {line}")
    for line in describe_liveness(results.get("liveness") or {}, run_dir):
        say(f"liveness: {line}")
    for line in describe_premise(results.get("premise") or {}):
        say(f"premise: {line}")
    checked = results["checked"]
    say(f"checked {checked['ops']} ops in {checked['partitions']} partition(s) in "
        f"{checked['seconds']:.2f} s")
    valid = results["valid"]
    say(f"verdict: {verdict_word(valid).upper()} (valid: {orjson.dumps(valid).decode()})")
    if valid is not True:
        for reason in results["reasons"]:
            say(f"  - {reason}")
    if results_path is not None:
        say(f"results: {results_path}")


SUMMARY_FORMATS = ("text", "json", "markdown")


def summary_document(results: dict[str, Any], results_path: Path | None) -> dict[str, Any]:
    """What `fencepost check --format json` prints: the verdict and what decided it, the counts,
    one example of each anomaly in one line, the liveness section, and where results.json is."""
    return {"verdict": verdict_word(results["valid"]), "valid": results["valid"],
            "anomaly_counts": results["anomaly_counts"],
            "examples": {name: one_line(results["anomalies"].get(name, [{}])[0], limit=400)
                         for name in results["anomaly_counts"]},
            "reasons": results["reasons"], "checked": results["checked"],
            "input_problems": {"errors": len(results["errors"]), "warnings": len(results["warnings"])},
            "liveness": results.get("liveness") or {},
            "premise": results.get("premise") or {},
            "results": None if results_path is None else str(results_path)}


def summary_markdown(results: dict[str, Any], results_path: Path | None) -> str:
    """What `fencepost check --format markdown` prints: the verdict, a GitHub table of the
    anomalies (count, one example), the reasons, liveness findings."""
    lines = [f"**verdict: {verdict_word(results['valid']).upper()}**", ""]
    counts = results["anomaly_counts"]
    if counts:
        lines += ["| anomaly | count | example |", "|---|---:|---|"]
        for name, n in counts.items():
            example = one_line(results["anomalies"].get(name, [{}])[0]).replace("|", "\\|")
            lines.append(f"| {name} | {n} | `{example}` |")
    else:
        lines.append("no anomalies found")
    if results["valid"] is not True and results["reasons"]:
        lines += ["", *(f"- {reason}" for reason in results["reasons"])]
    liveness = describe_liveness(results.get("liveness") or {})
    if liveness:
        lines += ["", *(f"- liveness: {line}" for line in liveness)]
    unmet = describe_premise(results.get("premise") or {})
    if unmet:
        lines += ["", *(f"- premise: {line}" for line in unmet)]
    checked = results["checked"]
    lines += ["", f"_checked {checked['ops']} ops in {checked['partitions']} partition(s)"
                  + (f"; results: `{results_path}`" if results_path is not None else "") + "_"]
    return printable("\n".join(lines) + "\n")


def _attach_ops(history: Path, examples: dict[str, list[dict[str, Any]]]) -> None:
    """Add to each example the history lines of the ops it names (`ops`: indices)."""
    wanted: dict[int, list[int]] = {}
    named: list[tuple[dict[str, Any], list[int]]] = []
    for items in examples.values():
        for example in items:
            indices = sorted(op_indices(example.get("ops")))[:OPS_PER_EXAMPLE]
            if indices:
                named.append((example, indices))
                for i in indices:
                    wanted[i] = []
    if not wanted:
        return
    lines = lines_at(history, set(wanted))
    for example, indices in named:
        example["history"] = [lines[i] for i in indices if i in lines]


def _totals(stats: Any) -> dict[str, int]:
    """Sums of the integer stats over the partitions."""
    totals: dict[str, int] = defaultdict(int)
    for partition_stats in stats:
        for key, value in partition_stats.items():
            if type(value) is int:
                totals[key] += value
    return dict(totals)
