"""The order of `fencepost compare`'s rows, and how a row is named.

Rows come in groups, one per fault (by name). Within a group: the own broker first,
then stock Kafka by release, compared as numbers part by part (0.10.2.2 < 0.11.0.3 <
1.1.1 < 2.0.1 < 2.1.1 < 3.9.1 < 4.4.0; plain `kafka`, the default release, before them;
a release with a suffix, 3.9.1-rc1, just before 3.9.1), then any other system by name;
within a system, truncation in protocol order: hw, kip101, kip279, kip320, release
(any other after them, by name). A system run with system options is named with them
(`kafka:4.1.1[elr=false]`, harness/compare/collect.py) and comes right after the same system
without. A row is named SYSTEM:TRUNCATION (`own:hw`, `kafka:2.0.1:kip320`), as `--baseline`
takes it.
"""
from __future__ import annotations

import re

from fencepost.clusters import TRUNCATIONS

_RELEASE = re.compile(r"(\d+(?:\.\d+)*)(?:-(.+))?")


def release_key(release: str) -> tuple:
    """Releases as numbers part by part; one not made of numbers after all of them."""
    match = _RELEASE.fullmatch(release)
    if match is None:
        return (1, release)
    numbers = tuple(int(part) for part in match.group(1).split("."))
    suffix = match.group(2)
    return (0, numbers, suffix is None, suffix or "")


def system_key(system: str) -> tuple:
    """A system's place; one with system options (`kafka:4.1.1[elr=false]`) right after the same
    system without, in the order of its options' text."""
    system, bracket, options = system.partition("[")
    extra = (bracket + options,)
    if system == "own":
        return (0, (), extra)
    if system == "kafka":
        return (1, (-1,), extra)
    if system.startswith("kafka:"):
        return (1, release_key(system[len("kafka:"):]), extra)
    return (2, system, extra)


def truncation_key(truncation: str) -> tuple:
    if truncation in TRUNCATIONS:
        return (TRUNCATIONS.index(truncation), "")
    return (len(TRUNCATIONS), truncation)


def version_key(system: str, truncation: str) -> tuple:
    """The order of (system, truncation) within a fault group (the names themselves last,
    so that two spellings of one release, 3.9.1 and 3.9.01, still come in one order)."""
    return system_key(system), truncation_key(truncation), system, truncation


def row_key(system: str, truncation: str, faults: str) -> tuple:
    """The order of the table: by fault group, then `version_key`."""
    return faults, version_key(system, truncation)


def label(system: str, truncation: str) -> str:
    """A row's name within its fault group: SYSTEM:TRUNCATION."""
    return f"{system}:{truncation}"
