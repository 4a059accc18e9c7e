"""The modes a cluster runs in, named once for the harness and every system (the own broker
keeps its own copy in broker/common/, since it imports nothing of the project).

- truncation: how a follower truncates its log when it follows a new leader. `hw` (to its
  high watermark: before KIP-101), `kip101` (leader epochs), `kip279` (epochs over many
  leader changes), `kip320` (epochs checked by the fetcher and consumers too); on stock
  Kafka these are inter.broker.protocol.version emulations, and `release` is the
  release's own protocol.
- flush: when a broker fsyncs its log. `os` (Kafka's default: the page cache decides),
  `fsync` (after every append), `lazy` (the node's data on a lazy filesystem, so that a
  power cut loses what was not fsynced).
"""
from __future__ import annotations

TRUNCATION_MODES = ("hw", "kip101", "kip279", "kip320")
RELEASE_PROTOCOL = "release"
TRUNCATIONS = (*TRUNCATION_MODES, RELEASE_PROTOCOL)
FLUSH_MODES = ("os", "fsync", "lazy")
