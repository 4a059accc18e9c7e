"""The `fencepost` command line: parses arguments, dispatches to a subcommand
(harness/commands/), and turns failures into the exit codes of docs/FORMATS.md, exit codes:
254 for bad arguments or input (argparse errors too, not argparse's 2), 255
with "fencepost crashed: ..." and the traceback when the harness itself fails.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
import traceback
from typing import NoReturn, Sequence

from fencepost.harness.commands import command_modules, examples
from fencepost.harness.errors import EXIT_BAD_INPUT, EXIT_CRASH, BadInput, printable
from fencepost.harness.processes.pipes import outputs_that_may_close

EXAMPLES = (
    ("fencepost run", "a 60 s chaos run against the own brokers, checked and reported"),
    ("fencepost check results/latest", "check the newest run again"),
    ("fencepost trace results/latest 3-17", "every event that touched the value 3-17"),
    ("fencepost serve", "browse the runs at http://127.0.0.1:8080/"),
    ("fencepost doctor", "what this machine can run"),
    ("fencepost COMMAND --help", "a command's flags and examples"),
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors exit 254."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, printable(f"{self.prog}: error: {message}\n"))


class _Version(argparse.Action):
    """--version: what fencepost runs with (harness/provenance.py), then exit 0."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from fencepost.harness.provenance import history_reader, versions

        found = versions()
        print(f"fencepost {found['fencepost']}\n"
              f"Python {found['python']}\n"
              f"confluent-kafka {found['confluent_kafka']} (librdkafka {found['librdkafka']})\n"
              f"run files read by: {history_reader()}")
        parser.exit(0)


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=min(100, shutil.get_terminal_size().columns - 2))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fencepost", description="Jepsen-style chaos testing of Kafka replication.",
                     epilog=examples(EXAMPLES), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the versions of fencepost, Python, confluent-kafka and librdkafka "
                             "and which reader reads run files, then exit")
    verbs = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules():
        # Raw, so the examples keep their lines; the prose is wrapped here instead.
        sub = verbs.add_parser(module.NAME, help=module.HELP, description=_wrap(module.HELP),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        # A module's own epilog (check: which reader reads) comes first, then its examples.
        own = _wrap(sub.epilog) if sub.epilog else None
        sub.epilog = "\n\n".join(part for part in (own, examples(module.EXAMPLES)) if part)
        sub.set_defaults(run=module.run)
    parser.set_defaults(parser=parser)  # the whole parser, for a command that describes it (completion)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    with outputs_that_may_close():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # --help, or a usage error (already printed)
            return _exit_status(stop.code)
        if getattr(args, "run", None) is None:
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
        return args.run(args)
    except BadInput as e:  # messages carry values of the input: printed escaped (errors.printable)
        print(printable(f"fencepost: {e}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("fencepost: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # the catch-all (docs/FORMATS.md, exit codes): the harness itself failed
        print(printable(f"fencepost crashed: {type(e).__name__}: {e}"), file=sys.stderr)
        print(printable(traceback.format_exc()), file=sys.stderr, end="")
        return EXIT_CRASH


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(printable(str(code)), file=sys.stderr)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
