"""Which way the imports go, read from the source (docs/ARCHITECTURE.md draws it).

- The rooms of harness/ stand in LAYERS, lowest first: a room imports only rooms of lower
  layers, never one of its own layer or above, so there is no cycle between rooms; a new room
  has to be given its place here.
- Between the packages, FORBIDDEN: nothing imports harness; nemesis never imports broker (a
  system, clusters/systems/, answers questions about its own files); clusters never imports
  broker (it starts it as a process); checkers import nothing of the others.
  (broker imports nothing of the rest: tests/broker/test_broker_common.py; clusters is reached
  through its public face and clusters/lazyfs never imports clusters/hosts:
  tests/clusters/test_layering.py.)"""
from __future__ import annotations

from pathlib import Path

from tests.support.imports import PACKAGES, arrows, room_of
from tests.support.paths import ROOT

LAYERS: tuple[tuple[str, ...], ...] = (
    ("harness/errors", "harness/_native", "harness/processes"),
    ("harness/rundir",),  # every file of the run directory: names, documents, readers, writers
    ("harness/edn", "harness/measures"),  # what a history measures: fault bands, consumer lag
    ("harness/check",),  # history + final logs -> results.json
    ("harness/provenance", "harness/report", "harness/compare"),  # results -> report.html; runs side by side
    ("harness/doctor", "harness/index", "harness/run"),  # the runner checks and reports the run it made
    ("harness/campaign", "harness/serve", "harness/pytest_plugin"),
    ("harness/replay", "harness/analysis"),
    ("harness/commands",),
    ("harness/cli",),
)

# (importing package or room, imported package or room it must never reach, why)
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    *((package, "harness", "nothing imports the harness: it hands the others a recorder")
      for package in PACKAGES if package != "harness"),
    ("nemesis", "broker", "a system (clusters/systems/) answers what a node durably kept"),
    ("clusters", "broker", "clusters starts the broker as a process and never imports it"),
    *(("checkers", package, "checkers are pure functions of Python objects")
      for package in PACKAGES if package != "checkers"),
)


def layer_of(room: str) -> int | None:
    for number, layer in enumerate(LAYERS):
        if room in layer:
            return number
    return None


def within(room: str, area: str) -> bool:
    return room == area or room.startswith(area + "/")


def harness_rooms(root: Path = ROOT) -> set[str]:
    """Every room of harness/ on disk: its subpackages, modules and extensions."""
    rooms = set()
    for entry in (root / "harness").iterdir():
        if entry.name.startswith(("_", ".")) and not entry.name.startswith("_native"):
            continue
        if entry.is_dir() and (entry / "__init__.py").is_file() or entry.suffix in (".py", ".so"):
            rooms.add(room_of(f"harness.{entry.name.split('.')[0]}", root))
    return rooms - {None}


def against_the_layers(root: Path = ROOT) -> list[str]:
    wrong = []
    for arrow in arrows(("harness",), root):
        if not within(arrow.target, "harness"):
            continue
        source, target = layer_of(arrow.source), layer_of(arrow.target)
        if target is None or (source is not None and target >= source):
            wrong.append(str(arrow))
    return wrong


def forbidden_arrows(root: Path = ROOT) -> list[str]:
    return [f"{arrow} ({why})" for arrow in arrows(PACKAGES, root) for importer, imported, why in FORBIDDEN
            if within(arrow.source, importer) and within(arrow.target, imported)]


def test_every_room_of_the_harness_has_its_place_in_the_layers():
    rooms = harness_rooms()
    placed = {room for layer in LAYERS for room in layer}
    assert rooms - placed == set(), "give each new room of harness/ its layer in LAYERS (which rooms may it import?)"
    assert placed - rooms == set(), "LAYERS names rooms that are gone: take them out"
    assert len(placed) == sum(len(layer) for layer in LAYERS), "a room stands in two layers"


def test_harness_rooms_import_only_rooms_below_them():
    wrong = against_the_layers()
    assert wrong == [], ("a room of harness/ imports a room of its own layer or above (a cycle in the making): move "
                         "what both need to a lower room, or the room up in LAYERS:\n" + "\n".join(wrong))


def test_no_package_imports_what_it_must_not():
    wrong = forbidden_arrows()
    assert wrong == [], "\n".join(wrong)


def write(root: Path, path: str, text: str) -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)


def test_the_rules_catch_an_arrow_against_them(tmp_path):
    for package in PACKAGES:
        write(tmp_path, f"{package}/__init__.py", "")
    write(tmp_path, "harness/check/__init__.py", "")
    write(tmp_path, "harness/report/__init__.py", "")
    write(tmp_path, "harness/check/liveness.py",
          "def f():\n    from fencepost.harness.report.bands import Band\n")
    write(tmp_path, "harness/report/html.py", "from ..check import liveness\n")
    write(tmp_path, "nemesis/durability.py", "import fencepost.broker.storage.checkpoints\n")
    write(tmp_path, "checkers/check.py", "from fencepost.clusters import fatal_markers\n")
    layers = against_the_layers(tmp_path)
    assert [line.split(":")[0] for line in layers] == ["harness/check/liveness.py"] * 2
    forbidden = forbidden_arrows(tmp_path)
    assert {line.split(":")[0] for line in forbidden} == {"nemesis/durability.py", "checkers/check.py"}


def test_the_architecture_page_draws_these_layers():
    """docs/ARCHITECTURE.md draws the harness's rooms one layer a line, the highest first."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    picture = text[text.index("\nharness/ "):].split("\n")[2:]
    drawn = []
    for line in picture:
        if not line.startswith("             ") or not line.strip():
            break
        drawn.append(tuple(f"harness/{name}" for name in line.split()))
    assert tuple(reversed(drawn)) == LAYERS, "draw LAYERS in docs/ARCHITECTURE.md as they stand here"
