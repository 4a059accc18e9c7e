"""Producer id allocation for idempotent producers, unique across restarts (a persisted block counter).

Owns `producer-id-block` in the data directory: the first id of the next block
not yet handed out. Ids are served from an in-memory block; taking a new block
first records its end durably, so a crash at any point never reuses an id (it
may skip the rest of a block, as Kafka's ProducerIdManager does). In a cluster
each broker hands out only the ids congruent to its node id modulo
NODE_ID_STRIDE, so two brokers never give two producers the same id (Kafka
takes blocks from the controller instead).
"""
from __future__ import annotations

from pathlib import Path

from fencepost.broker.common.durable_file import write_file_atomically

FILE_NAME = "producer-id-block"
BLOCK_SIZE = 1000
NODE_ID_STRIDE = 1 << 16


class ProducerIdManager:
    def __init__(self, data_dir: Path, block_size: int = BLOCK_SIZE, node_id: int = 0) -> None:
        if not 0 <= node_id < NODE_ID_STRIDE:
            raise ValueError(f"node id {node_id} is outside 0..{NODE_ID_STRIDE - 1}")
        self.node_id = node_id
        self.path = Path(data_dir) / FILE_NAME
        self.block_size = block_size
        self._next = 0
        self._block_end = 0  # nothing allocated yet: the first call takes a block
        if self.path.exists():
            text = self.path.read_text().strip()
            try:
                self._next = self._block_end = int(text)
            except ValueError:
                raise RuntimeError(f"{self.path} should hold one integer (the next producer id block), "
                                   f"found {text[:40]!r}; restore it or remove it only if no producer "
                                   "from before will write again") from None
            if self._next < 0:
                raise RuntimeError(f"{self.path} holds a negative producer id {self._next}")

    def generate_producer_id(self) -> int:
        if self._next >= self._block_end:
            end = self._next + self.block_size
            write_file_atomically(self.path, f"{end}\n".encode())
            self._block_end = end
        local = self._next
        self._next += 1
        return local * NODE_ID_STRIDE + self.node_id
