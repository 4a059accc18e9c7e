"""What a node durably kept, as its system answers it (clusters/systems/base.py, System's
`checkpointed_high_watermark` and `partition_log_bytes`): the nemesis asks the cluster's system,
never the broker's files (tests/harness/test_layering.py). The replication-offset-checkpoint is
read by the system's own reader (clusters never imports broker): held here to the broker's
writer and reader (broker/storage/checkpoints.py) on the same files."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from fencepost.broker.storage.checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    read_offset_checkpoint,
    write_checkpoint,
)
from fencepost.clusters.hosts import process
from fencepost.clusters.systems import system_for


@pytest.fixture
def system():
    return system_for("own", {})


def broker_reading(path: Path, key: tuple[str, int]) -> int | None:
    try:
        return read_offset_checkpoint(path).get(key)
    except (CheckpointError, OSError):
        return None


def test_the_checkpointed_high_watermark_is_the_brokers_own_reading(system, tmp_path):
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    write_checkpoint(path, ["fp 0 12", "fp 2 88", "a-b.c 10 0"])
    for key in (("fp", 0), ("fp", 2), ("a-b.c", 10), ("fp", 1), ("other", 0)):
        assert system.checkpointed_high_watermark(tmp_path, *key) == broker_reading(path, key), key
    assert system.checkpointed_high_watermark(tmp_path, "fp", 2) == 88


@pytest.mark.parametrize("text", ["", "0\n", "1\n1\nfp 0 3\n", "0\n2\nfp 0 3\n", "0\nx\n", "0\n1\nfp 0\n",
                                  "0\n1\nfp zero 3\n", "0\n1\nfp 0 three\n", "0\n0\n"])
def test_a_checkpoint_the_broker_refuses_answers_none(system, tmp_path, text):
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_text(text, encoding="latin-1")
    assert system.checkpointed_high_watermark(tmp_path, "fp", 0) == broker_reading(path, ("fp", 0))
    assert system.checkpointed_high_watermark(tmp_path, "fp", 0) is None


def test_no_checkpoint_answers_none(system, tmp_path):
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n1\n\xff 0 3\n")
    assert system.checkpointed_high_watermark(tmp_path / "garbled", "fp", 0) is None
    assert system.checkpointed_high_watermark(tmp_path / "absent", "fp", 0) is None
    assert system.checkpointed_high_watermark(tmp_path, "fp", 0) is None


def test_the_partition_log_bytes_are_its_segments_on_the_hosts_folders(system, tmp_path):
    hosts = process.provision("fp-durable-unit", ["n1"], tmp_path / "hosts")
    host = hosts.hosts["n1"]
    first, second = tmp_path / "d1", tmp_path / "d2"
    (first / "fp-0").mkdir(parents=True)
    (first / "fp-0" / "00000000000000000000.log").write_bytes(b"x" * 100)
    (first / "fp-0" / "00000000000000000000.index").write_bytes(b"i" * 7)
    (first / "fp-1").mkdir()
    (first / "fp-1" / "00000000000000000000.log").write_bytes(b"y" * 50)
    (second / "fp-0").mkdir(parents=True)
    (second / "fp-0" / "00000000000000000042.log").write_bytes(b"z" * 30)
    folders = [str(first), str(second)]
    assert system.partition_log_bytes(host, folders, "fp", 0, timeout=10) == 130
    assert system.partition_log_bytes(host, folders, "fp", 1, timeout=10) == 50
    assert system.partition_log_bytes(host, folders, "fp", 2, timeout=10) == 0
    assert system.partition_log_bytes(host, [str(tmp_path / "gone")], "fp", 0, timeout=10) is None


def test_the_durability_scenarios_ask_the_system(system, tmp_path):
    """nemesis/durability.py measures a cut node through the cluster's system: the bytes of its
    partition's log on its lazy folders, the high watermark in its durable checkpoint."""
    from fencepost.nemesis import parse_fault
    from fencepost.nemesis.durability import Kip101Divergence

    hosts = process.provision("fp-durable-unit", ["n1"], tmp_path / "hosts")
    data, backing = tmp_path / "data", tmp_path / "backing"
    (data / "fp-1").mkdir(parents=True)
    (data / "fp-1" / "00000000000000000000.log").write_bytes(b"x" * 64)
    backing.mkdir()
    write_checkpoint(backing / REPLICATION_OFFSET_CHECKPOINT, ["fp 0 5", "fp 1 9"])
    disk = SimpleNamespace(folders=[str(data)])
    disks = SimpleNamespace(disk=lambda node: disk, durable_path=lambda node, relative="": backing / relative)
    ctx = SimpleNamespace(topic="fp", cluster=SimpleNamespace(system=system, hosts=hosts.hosts, disks=disks))
    scenario = Kip101Divergence(parse_fault("kip101-divergence"))
    scenario.partition = 1
    assert scenario.partition_log_bytes(ctx, "n1") == 64
    assert scenario.checkpointed_high_watermark(ctx, "n1") == 9
    scenario.partition = 2
    assert scenario.partition_log_bytes(ctx, "n1") == 0
    assert scenario.checkpointed_high_watermark(ctx, "n1") is None
