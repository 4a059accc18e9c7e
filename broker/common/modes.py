"""The broker's modes, spelled once: every command line, check and rule in `broker/` takes them from here.

- TRUNCATION_MODES: how a new follower cuts its log (`serve --truncation`), as
  each Kafka protocol version did it; the rules are in `broker.server.truncation`.
- FLUSH_MODES: when appends reach the disk (`serve --flush`); what each means is
  in `broker.storage.log`.
"""
from __future__ import annotations

TRUNCATION_MODES = ("hw", "kip101", "kip279", "kip320")
FLUSH_MODES = ("os", "fsync", "lazy")
