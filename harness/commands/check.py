"""`fencepost check RUN_DIR`: check a run and write its results.json."""
from __future__ import annotations

import argparse
import sys
from importlib.util import find_spec
from pathlib import Path

from fencepost.harness.commands.arguments import positive

NAME = "check"
HELP = "check a run directory: write results.json, print the verdict (exit 0/1/2)"
EXAMPLES = (
    ("fencepost check results/latest", "check the newest run: results.json, the verdict (exit 0/1/2)"),
    ("fencepost check RUN_DIR --no-write --jobs 1", "print the verdict only, in this process"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path,
                        help="a run directory (holding history.jsonl and final.jsonl), "
                             "e.g. results/latest")
    parser.add_argument("--no-write", action="store_true",
                        help="print the verdict only; write neither results.json nor linear/")
    parser.add_argument("--jobs", type=positive("processes"), default=None, metavar="N",
                        help="CPUs that read and check the run side by side, one worker process "
                             "each, or one per partition sharing N CPUs where that ends sooner "
                             "(default: one per CPU; 1: all in this process)")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                        help="the summary printed: text (a table, the default), json (verdict, counts, an example "
                             "of each anomaly, reasons, liveness) or markdown (a GitHub table)")
    parser.epilog = _READERS if find_spec("fencepost.harness._native") else _NO_C_READER


_READERS = ("history.jsonl and final.jsonl are read by the C reader (harness._native); a file it "
            "is not sure of (anything unusual) by the Python readers, which report what is wrong")
_NO_C_READER = ("history.jsonl and final.jsonl are read by the Python readers: the C reader "
                "(harness._native) was not built, for want of a C compiler when fencepost was "
                "installed; install one and `pip install -e .` again for a check several times "
                "faster")



def run(args: argparse.Namespace) -> int:
    import json

    from fencepost.harness.check.checking import check_run
    from fencepost.harness.check.summary import RESULTS_FILE, summary_document, summary_markdown
    from fencepost.harness.provenance import python_reader_notice

    notice = python_reader_notice()
    if notice is not None:
        print(notice, file=sys.stderr)

    if args.format == "text":
        return check_run(args.run_dir, write=not args.no_write, out=sys.stdout, jobs=args.jobs).exit_code
    outcome = check_run(args.run_dir, write=not args.no_write, out=None, jobs=args.jobs)
    written = None if args.no_write else args.run_dir / RESULTS_FILE
    if args.format == "json":
        print(json.dumps(summary_document(outcome.results, written), indent=1, default=str))
    else:
        sys.stdout.write(summary_markdown(outcome.results, written))
    return outcome.exit_code
