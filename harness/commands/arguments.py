"""Argument types the subcommands share (argparse `type=` callables)."""
from __future__ import annotations

import argparse
from typing import Callable


def positive(what: str) -> Callable[[str], int]:
    """An argparse type: a whole number of at least 1, else an error naming `what` it counts."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive number{f' of {what}' if what else ''}")
        return n
    return parse
