"""`fencepost completion bash|zsh`: print a shell completion script, generated from
fencepost's own argument parser by the `shtab` library, so it always knows every
command, flag and choice of the installed fencepost."""
from __future__ import annotations

import argparse

from fencepost.harness.errors import EXIT_VALID

NAME = "completion"
HELP = "print a shell completion script for bash or zsh (generated from fencepost's parser)"
SHELLS = ("bash", "zsh")
EXAMPLES = (
    ('eval "$(fencepost completion bash)"', "complete fencepost's commands and flags in this bash"),
    ("fencepost completion bash > ~/.local/share/bash-completion/completions/fencepost",
     "for every new bash"),
    ('fencepost completion zsh > "${fpath[1]}/_fencepost"', "for zsh (then restart it, or run compinit)"),
)
# Arguments that name paths, by metavar: completed as folders or as files.
FOLDER_METAVARS = frozenset(("RUN_DIR", "CAMPAIGN_DIR", "DIR"))
FILE_METAVARS = frozenset(("FILE", "FILE.toml", "PATH"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args: argparse.Namespace) -> int:
    import shtab

    parser = args.parser  # fencepost's whole parser (harness/cli.py hands it to every command)
    _mark_paths(parser, shtab)
    print(shtab.complete(parser, shell=args.shell), end="")
    return EXIT_VALID


def _mark_paths(parser: argparse.ArgumentParser, shtab) -> None:
    """Tell shtab which arguments are folders and which files (by metavar or a
    --results/--out/--config flag), in every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _mark_paths(sub, shtab)
        elif action.metavar in FOLDER_METAVARS or "--results" in action.option_strings:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]  # shtab's own attribute
        elif action.metavar in FILE_METAVARS or {"--out", "--config"} & set(action.option_strings):
            action.complete = shtab.FILE  # type: ignore[attr-defined]  # shtab's own attribute
