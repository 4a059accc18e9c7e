"""The registry of `fencepost` subcommands.

A subcommand is a module with `NAME`, `HELP`, `add_arguments(parser)` and
`run(args) -> int` (an exit code, DESIGN.md §3.5). Such modules import what they
need inside `run`, so that `fencepost --help` stays fast. To add a verb
(run, cluster, campaign, analyze, serve, ...), write its module and list it here.
"""
from __future__ import annotations

import importlib
from types import ModuleType

COMMANDS = (
    "harness.commands.run",
    "harness.commands.campaign",
    "harness.commands.compare",
    "harness.commands.analyze",
    "harness.commands.check",
    "harness.commands.export",
    "harness.commands.cluster",
    "harness.commands.cleanup",
    "harness.commands.nemesis",
    "harness.commands.serve",
    "harness.commands.report",
)


def command_modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]
