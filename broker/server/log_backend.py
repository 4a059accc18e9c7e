"""Which log implementation the server runs on: the storage layer's PartitionLog and LogManager."""
from __future__ import annotations

from .memory_log import LogManager, OffsetOutOfRange, PartitionLog

__all__ = ["LogManager", "OffsetOutOfRange", "PartitionLog"]
