"""Where things are, for tests that read files of the repository or start its code in a
process of its own: the repository's root (what PYTHONPATH must hold for `python -m
harness.cli` to import this checkout), the seeds' example runs, and this folder (the helper
scripts that tests start as programs: crash harnesses, the lazyfs probe).

Spelled once here, so a test file can move between the folders of tests/ without counting
parents."""
from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parents[1]
EXAMPLES = ROOT / "examples"
