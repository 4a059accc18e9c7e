"""The run's verdict from its partition reports: valid, invalid or unknown, and why.

Rules (docs/FORMATS.md, results.json and the exit codes, kept simple on purpose):
1. An anomaly of the run's invalid set found in a *fully read* partition (its
   final read present and complete, `LoadedRun.finals`) makes the run invalid —
   whatever else is missing, since such an anomaly does not depend on what was
   not read — unless the input files had errors (a corrupt line that is not the torn last
   one, a missing field, ...): a line that could not be read can itself make an
   anomaly (a lost send invoke reads as a phantom read, a lost final-read line
   as a lost write), so the run is then unknown and the anomalies are listed
   as not conclusive. Nor when the history holds no send and no poll (nothing
   to judge: the final log's records then all read as phantoms).
   A torn last line (no terminating newline: ignored) of history.jsonl lets an
   anomaly count only if a lost last line cannot cause it: any but those of
   `TORN_HISTORY_CAN_CAUSE` (a lost send invoke leaves the value it wrote with
   no send); of final.jsonl, none (a lost line of a final read or replica log
   can cause any of its anomalies).
2. Otherwise the run is unknown if anything could not be judged: errors in
   history.jsonl / final.jsonl, a torn last line, no final.jsonl, a missing or incomplete final
   read, a linearizability search that gave up, an anomaly of the invalid set
   in a partition that was not fully read (not conclusive), or no client
   operation at all.
3. Otherwise it is valid.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from fencepost.checkers import anomaly as A
from fencepost.checkers.check import PartitionReport
from fencepost.harness.check.loading import LoadedRun
from fencepost.harness.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
from fencepost.harness.rundir.names import FINAL_FILE, HISTORY_FILE

Valid = bool | Literal["unknown"]

# What a lost last line of history.jsonl can cause: a send invoke lost leaves its value, read by a
# poll or the final read, with no send (a phantom read, an aborted read when its other sends
# failed, a log no linearization explains). A lost completion leaves its op unknown (`info`),
# which makes no anomaly; a lost poll, assign, commit or nemesis line has nothing after it.
TORN_HISTORY_CAN_CAUSE = frozenset((A.PHANTOM_READ, A.ABORTED_READ, A.NONLINEARIZABLE))


@dataclass(slots=True)
class Verdict:
    valid: Valid
    reasons: list[str] = field(default_factory=list)  # why unknown (or, if invalid, also unknown)
    decisive: Counter = field(default_factory=Counter)  # invalid-set anomalies that count
    not_conclusive: Counter = field(default_factory=Counter)  # invalid-set, not fully read

    @property
    def exit_code(self) -> int:
        return exit_code(self.valid)


def exit_code(valid: Valid) -> int:
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN


def decide(run: LoadedRun, reports: list[PartitionReport]) -> Verdict:
    verdict = Verdict(True)
    reasons = verdict.reasons
    invalid = run.invalid_anomalies
    errors = run.problems.error_count
    if errors:
        first = run.problems.errors[0] if run.problems.errors else ""
        reasons.append(f"{errors} error(s) in the input files (listed under \"errors\"); the first: "
                       f"{first}")
    if not run.final_present:
        reasons.append(f"{FINAL_FILE} is missing: the final reads were not written (did the run "
                       f"stop before its final-read phase? see fencepost.log); lost writes and "
                       f"truncated reads cannot be judged")
    nothing = not any(run.counts.by_f_type.get(f) for f in ("send", "poll"))
    if nothing:
        reasons.append("the history holds no send or poll: there is nothing to judge")
    if run.counts.history_torn:
        reasons.append(f"the last line of {HISTORY_FILE} is torn (no terminating newline; see \"warnings\"): "
                       f"the operation it held is unknown")
    if run.counts.final_torn:
        reasons.append(f"the last line of {FINAL_FILE} is torn (no terminating newline; see \"warnings\"): "
                       f"what it held is unknown")
    unsure = errors or nothing or run.counts.final_torn
    hanging = TORN_HISTORY_CAN_CAUSE if run.counts.history_torn else frozenset()
    for report in reports:
        final = run.finals.get((report.topic, report.partition))
        fully_read = final is not None and final.present and final.complete
        for anomaly in report.anomalies:
            if anomaly.name in invalid:
                conclusive = fully_read and not unsure and anomaly.name not in hanging
                (verdict.decisive if conclusive else verdict.not_conclusive)[anomaly.name] += 1
        for reason in report.unknown_reasons:
            if reason not in reasons:
                reasons.append(reason)
        if final is not None and not fully_read and not report.unknown_reasons:
            what = "incomplete" if final.present else "missing"
            reasons.append(f"the final read of {report.topic}/{report.partition} is {what}")
    if verdict.not_conclusive:
        names = ", ".join(f"{name}: {n}" for name, n in sorted(verdict.not_conclusive.items()))
        reasons.append(f"anomalies found with errors in the input files, or in partitions whose final read is "
                       f"missing or incomplete, are not conclusive ({names})" if errors else
                       f"anomalies that a torn last line or the want of any send and poll can explain, "
                       f"or found in partitions whose final read is missing or incomplete, are not "
                       f"conclusive ({names})" if unsure or hanging else
                       f"anomalies found in partitions whose final read is missing or incomplete "
                       f"are not conclusive ({names})")
    if verdict.decisive:
        verdict.valid = False
    elif reasons:
        verdict.valid = "unknown"
    return verdict
