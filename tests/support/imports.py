"""The imports between the rooms of the project's packages, read from the source with ast, for
the layering tests (tests/harness/test_layering.py, tests/clusters/test_layering.py).

A room is a package (`harness`, `clusters`, ...) followed by one name directly under it: a
subpackage (`harness/check`), a module (`harness/errors`) or an extension (`harness/_native`).
Relative imports are resolved; `from fencepost.harness import _native` imports the room
`harness/_native`; imports inside functions count as much as those at the top; the package's
own `__init__.py` is no room and imports made there are not counted."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("broker", "clusters", "checkers", "workloads", "nemesis", "harness")
NAMESPACE = "fencepost"


@dataclass(frozen=True)
class Arrow:
    """One import of a module of room `target` by the file `path` (of room `source`), at `line`."""
    source: str
    target: str
    path: str
    line: int
    module: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.source}) imports {self.module} ({self.target})"


def room_of(module: str, root: Path = ROOT) -> str | None:
    """`harness/check` for fencepost.harness.check.liveness; the package alone for the package
    itself (fencepost.harness); None for anything outside the project's packages."""
    parts = module.split(".")
    if parts[0] == NAMESPACE:
        parts = parts[1:]
    if not parts or parts[0] not in PACKAGES:
        return None
    if len(parts) == 1:
        return parts[0]
    folder = root / parts[0]
    name = parts[1]
    if (folder / name).is_dir() or (folder / f"{name}.py").is_file() or any(folder.glob(f"{name}.*.so")):
        return f"{parts[0]}/{name}"
    return parts[0]


def _module_of(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    module = _module_of(path, root)
    package = module if path.name == "__init__.py" else module[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - node.level + 1]
                base = ".".join([NAMESPACE, *anchor, *([base] if base else [])])
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def arrows(packages: tuple[str, ...] = PACKAGES, root: Path = ROOT) -> list[Arrow]:
    """Every import from one room into another, in the files of `packages` under `root`."""
    return [arrow for package in packages for arrow in _package_arrows(package, root)]


@lru_cache(maxsize=None)
def _package_arrows(package: str, root: Path) -> tuple[Arrow, ...]:
    found = []
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" in path.parts or path == root / package / "__init__.py":
            continue
        source = room_of(".".join(_module_of(path, root)), root)
        for line, module in _imported(path, root):
            target = room_of(module, root)
            if target is None or target == source:
                continue
            if target in PACKAGES and module.split(".")[-1] in PACKAGES:
                continue  # `from fencepost.harness import _native`: the names count, not the package
            found.append(Arrow(source, target, str(path.relative_to(root)), line, module))
    return tuple(found)
