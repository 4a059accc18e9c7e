"""The registry of `fencepost` subcommands.

A subcommand is a module with `NAME`, `HELP`, `EXAMPLES` (pairs of a command line
and what it does, shown under `--help`), `add_arguments(parser)` and
`run(args) -> int` (an exit code: 0 valid, 1 invalid, 2 unknown, 254 bad input,
255 crashed). Such modules import what they
need inside `run`, so that `fencepost --help` stays fast. To add a verb
(run, cluster, campaign, analyze, serve, ...), write its module and list it here.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Sequence

COMMANDS = (
    "fencepost.harness.commands.run",
    "fencepost.harness.commands.campaign",
    "fencepost.harness.commands.summarize",
    "fencepost.harness.commands.replay",
    "fencepost.harness.commands.shrink",
    "fencepost.harness.commands.compare",
    "fencepost.harness.commands.analyze",
    "fencepost.harness.commands.check",
    "fencepost.harness.commands.export",
    "fencepost.harness.commands.cluster",
    "fencepost.harness.commands.cleanup",
    "fencepost.harness.commands.nemesis",
    "fencepost.harness.commands.serve",
    "fencepost.harness.commands.report",
    "fencepost.harness.commands.trace",
    "fencepost.harness.commands.doctor",
    "fencepost.harness.commands.completion",
)


def examples(pairs: Sequence[tuple[str, str]]) -> str:
    """An epilog of examples: each command line, and under it what it does (shown
    under --help with argparse.RawDescriptionHelpFormatter, which keeps the lines)."""
    return "examples:\n" + "\n".join(f"  {command}\n      {what}" for command, what in pairs)


def command_modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]
