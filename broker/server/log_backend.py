"""Which log implementation the server runs on: the storage layer's PartitionLog and LogManager."""
from __future__ import annotations

from fencepost.broker.storage import DataDirInUse, LogManager, OffsetOutOfRange, PartitionLog

__all__ = ["DataDirInUse", "LogManager", "OffsetOutOfRange", "PartitionLog"]
