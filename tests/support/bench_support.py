"""Loading a benchmark script of bench/ as a module, for tests of its pure parts."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def bench_module(path: Path, name: str) -> ModuleType:
    """The script at `path` imported as module `name` (its main() not run)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
