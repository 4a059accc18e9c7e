"""fencepost: Jepsen-style chaos testing of Kafka replication.

The one importable name. Its subpackages are the project's top-level folders (harness, clusters,
broker, nemesis, workloads, checkers), reached through the symlinks beside this file, so that an
installed fencepost adds only `fencepost` to site-packages while the checkout keeps the layout
its users know. docs/ARCHITECTURE.md draws the rooms.
"""
from __future__ import annotations

from pathlib import Path

# The folder holding this package: the checkout's root in an editable install, site-packages in
# a wheel's. A process of the project's own (a campaign's child, a docker node) is given it as
# PYTHONPATH so that it imports this very code.
IMPORT_ROOT = Path(__file__).resolve().parent.parent
