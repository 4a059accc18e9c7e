"""The broker's layering: server and controller share broker.common and import nothing of each other;
nothing in broker/ imports the rest of fencepost; the mode names are spelled once (broker/common/modes.py)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fencepost import broker
from fencepost.broker.common import controller_protocol
from fencepost.broker.common.modes import FLUSH_MODES, TRUNCATION_MODES
from fencepost.broker.server import config as server_config
from fencepost.broker.server import truncation
from fencepost.broker.storage import log as storage_log
from fencepost.broker.storage import manager as storage_manager

BROKER = Path(broker.__file__).parent
PROJECT_PACKAGES = ("harness", "clusters", "workloads", "nemesis", "checkers")


def imported_modules(package: str) -> dict[str, set[str]]:
    """Every absolute module each file of broker/<package> imports (relative imports stay inside the package)."""
    found: dict[str, set[str]] = {}
    for path in sorted((BROKER / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        found[str(path.relative_to(BROKER.parent))] = names
    return found


@pytest.mark.parametrize("package, forbidden", [
    ("server", ("fencepost.broker.controller",)),
    ("controller", ("fencepost.broker.server", "fencepost.broker.storage")),
    ("common", ("fencepost.broker.server", "fencepost.broker.controller", "fencepost.broker.storage")),
    ("storage", ("fencepost.broker.server", "fencepost.broker.controller")),
])
def test_broker_packages_import_only_what_their_layer_allows(package: str, forbidden: tuple[str, ...]) -> None:
    wrong = {f"{path}: {name}" for path, names in imported_modules(package).items() for name in names
             if any(name == f or name.startswith(f + ".") for f in forbidden)}
    assert not wrong, f"broker/{package} imports what it must not: {sorted(wrong)}"


def test_broker_imports_nothing_of_the_rest_of_fencepost() -> None:
    wrong = {f"{path}: {name}" for path, names in imported_modules("").items()
             for name in names if name.removeprefix("fencepost.").split(".")[0] in PROJECT_PACKAGES}
    assert not wrong, f"broker/ imports fencepost outside it: {sorted(wrong)}"


def test_the_mode_names_are_the_common_ones_everywhere() -> None:
    assert TRUNCATION_MODES == ("hw", "kip101", "kip279", "kip320")
    assert FLUSH_MODES == ("os", "fsync", "lazy")
    assert server_config.TRUNCATION_MODES is TRUNCATION_MODES and server_config.FLUSH_MODES is FLUSH_MODES
    assert truncation.TRUNCATION_MODES is TRUNCATION_MODES and controller_protocol.TRUNCATION_MODES is TRUNCATION_MODES
    assert storage_log.FLUSH_MODES is FLUSH_MODES and storage_manager.FLUSH_MODES is FLUSH_MODES
    choices = {a.dest: a.choices for a in server_config.serve_argument_parser()._actions}
    assert tuple(choices["truncation"]) == TRUNCATION_MODES and tuple(choices["flush"]) == FLUSH_MODES
