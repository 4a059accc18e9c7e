"""What the packages may take from each other, read from the source: the harness, the nemesis
and the workloads reach clusters only through its public face (clusters/__init__.py), and the
modes the harness names (clusters/modes.py) are the broker's own copy's (broker/common/modes.py,
kept apart because the broker imports nothing of the project); and the rooms of clusters/ whose
order is settled import only downward, per FORBIDDEN (the lazy filesystem, clusters/lazyfs, is a
tool the hosts use: it takes this machine's processes from clusters/processes.py, never the hosts).
The System's own reader of the broker's checkpoint is held to the broker's by
tests/clusters/test_system_durable.py. The rules between the packages: tests/harness/test_layering.py."""
from __future__ import annotations

import re

import fencepost.broker.common.modes as broker_modes
import fencepost.clusters.modes as cluster_modes
from fencepost import clusters
from tests.support.imports import arrows
from tests.support.paths import ROOT

# (importing room, room it must never reach): the disks and the hosts import clusters/lazyfs, not the other way
FORBIDDEN = (("clusters/lazyfs", "clusters/hosts"),)
DEEP_IMPORT = re.compile(r"^\s*(?:from|import) fencepost\.clusters\.([\w.]+)", re.M)


def test_clusters_is_reached_through_its_public_face():
    deep = [f"{path.relative_to(ROOT)}: fencepost.clusters.{m}"
            for package in ("harness", "nemesis", "workloads")
            for path in sorted((ROOT / package).rglob("*.py"))
            for m in DEEP_IMPORT.findall(path.read_text())]
    assert deep == []
    for name in clusters.__all__:
        assert getattr(clusters, name) is not None, name


def test_the_harness_and_the_broker_name_the_same_modes():
    assert cluster_modes.TRUNCATION_MODES == broker_modes.TRUNCATION_MODES
    assert cluster_modes.FLUSH_MODES == broker_modes.FLUSH_MODES
    assert cluster_modes.TRUNCATIONS == (*broker_modes.TRUNCATION_MODES, cluster_modes.RELEASE_PROTOCOL)


def test_clusters_rooms_import_only_downward():
    wrong = [str(arrow) for arrow in arrows(("clusters",)) for importer, imported in FORBIDDEN
             if arrow.source == importer and arrow.target == imported]
    assert wrong == [], ("what both rooms need goes to a room below both (clusters/processes.py, clusters/errors.py):\n"
                         + "\n".join(wrong))
