"""`fencepost trace RUN_DIR VALUE` / `--offset TOPIC/PARTITION/OFFSET`: every event
that touched a value (or an offset), in time order — its send's invoke and
completion, every poll that returned it, the nemesis actions around — then what
final.jsonl holds where it was: the final read and each replica's record, epoch and
high watermark (harness/report/trace.py). `--html` also writes the page the report links
to from its anomaly examples."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fencepost.harness.errors import EXIT_VALID, BadInput

NAME = "trace"
HELP = "follow a value (or an offset) through a run: sends, polls, final read, replicas, faults around"
EXAMPLES = (
    ("fencepost trace results/latest 3-17", "every event that touched the value 3-17, in time order"),
    ("fencepost trace results/latest --offset fp/0/264", "everything at offset 264 of fp-0"),
    ("fencepost trace RUN_DIR 3-17 --around 30 --html", "faults within 30 s; also write RUN_DIR/trace/value-3-17.html"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a run directory, e.g. results/latest")
    parser.add_argument("value", metavar="VALUE", nargs="?",
                        help="a value a producer sent (e.g. 3-17: process 3's 17th); or give --offset")
    parser.add_argument("--offset", metavar="TOPIC/PARTITION/OFFSET",
                        help="trace an offset instead of a value, e.g. fp/0/264")
    parser.add_argument("--around", type=_seconds, default=10.0, metavar="S",
                        help="show the nemesis actions within S seconds of the first and last event "
                             "(default 10)")
    parser.add_argument("--html", action="store_true",
                        help="also write the page RUN_DIR/trace/<value or offset>.html and print its path")


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < 1e7:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return seconds


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.report.trace import Target, parse_offset, trace_run
    from fencepost.harness.report.trace_page import write_trace_page

    if (args.value is None) == (args.offset is None):
        raise BadInput("give a VALUE (e.g. 3-17) or --offset TOPIC/PARTITION/OFFSET (e.g. fp/0/264), "
                       "one of the two")
    target = Target(value=args.value) if args.value is not None else parse_offset(args.offset)
    trace = trace_run(args.run_dir, target, args.around)
    print_trace(trace, args.run_dir, sys.stdout)
    if args.html:
        print(f"\npage: {write_trace_page(args.run_dir, trace)}")
    return EXIT_VALID


def print_trace(trace, run_dir: Path, out) -> None:
    """The trace as the terminal shows it: the events, then final.jsonl per offset."""
    from fencepost.harness.errors import printable
    target = trace.target
    print(printable(f"trace of {target.describe()} in {run_dir}"), file=out)  # the run's text, escaped
    print(f"\n{'time (s)':>12}  {'line(s)':<15} {'process':<8} what", file=out)
    for event in trace.events:
        lines = "-".join(map(str, event.lines))
        print(printable(f"{event.time / 1e9:12.6f}  {lines:<15} {event.process:<8} {event.what}", False), file=out)
    if not trace.final_present:
        print("\nfinal.jsonl: missing (the run stopped before its final reads); nothing after the run to show",
              file=out)
        return
    for final in trace.finals:
        topic, partition, offset = final.place
        print(printable(f"\nfinal.jsonl at {topic}-{partition} offset {offset}:"), file=out)
        print(f"  {'final read':<12} {_held(final.read, target.value)}{_completeness(final.read_complete)}",
              file=out)
        for replica in final.replicas:
            hw = replica.high_watermark
            below = ("" if hw is None
                     else " (offset below it: committed)" if offset < hw else " (offset at or above it)")
            print(f"  {printable(str(replica.node), False):<12} {_held(replica.value, target.value)}, leader epoch "
                  f"{'-' if replica.epoch is None else replica.epoch}, high watermark "
                  f"{'-' if hw is None else hw}{below}, log end {replica.log_end_offset}", file=out)
    if target.value is not None:
        where = ", ".join(f"{t}-{p} offset {o}" for t, p, o in trace.held_at) or "nowhere"
        print(printable(f"\nthe final read holds {target.value!r} at: {where}"), file=out)


def _held(value: str | None, wanted: str | None) -> str:
    if value is None:
        return "no record"
    if wanted is None:
        return repr(value)
    return f"{value!r}" + (" (this value)" if value == wanted else " (another value)")


def _completeness(complete: bool | None) -> str:
    if complete is None:
        return " (no final read of this partition)"
    return "" if complete else " (the final read of this partition is incomplete)"
