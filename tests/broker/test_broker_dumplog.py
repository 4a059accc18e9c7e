"""dump-log: final.jsonl lines (docs/FORMATS.md, final.jsonl) from our data dirs and stock-Kafka-shaped ones,
every codec, legacy formats, torn tails, internal topics, read-only."""
from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from fencepost.broker.dumplog import main
from fencepost.broker.storage.manager import LogManager
from tests.support.broker_storage_builder import Rec, batch, control_batch, legacy_messages, legacy_wrapper
from tests.support.paths import ROOT

REPLICA_FIELDS = ["kind", "node", "topic", "partition", "offset", "value", "leader_epoch"]
STATE_FIELDS = ["kind", "node", "topic", "partition", "log_end_offset", "high_watermark", "leader_epoch", "epochs"]
CODECS = ["none", "gzip", "snappy", "snappy-xerial", "lz4", "zstd"]


def run_dump(capsysbinary, *args: str) -> tuple[int, list[dict], str]:
    code = main(list(args))
    captured = capsysbinary.readouterr()
    lines = [orjson.loads(line) for line in captured.out.splitlines()]
    return code, lines, captured.err.decode()


def check_shapes(lines: list[dict]) -> None:
    for line in lines:
        if line["kind"] == "replica":
            assert list(line) == REPLICA_FIELDS
            assert isinstance(line["offset"], int) and isinstance(line["partition"], int)
            assert line["leader_epoch"] is None or isinstance(line["leader_epoch"], int)
            assert line["value"] is None or isinstance(line["value"], (str, dict))
        else:
            assert line["kind"] == "replica-state" and list(line) == STATE_FIELDS
            assert all(len(pair) == 2 for pair in line["epochs"])


def replicas(lines, topic="fp", partition=0):
    return [(line["offset"], line["value"], line["leader_epoch"]) for line in lines
            if line["kind"] == "replica" and (line["topic"], line["partition"]) == (topic, partition)]


def state(lines, topic="fp", partition=0):
    (found,) = [line for line in lines
                if line["kind"] == "replica-state" and (line["topic"], line["partition"]) == (topic, partition)]
    return found


def write_segments(partition_dir: Path, segments: dict[int, list[bytes]]) -> None:
    partition_dir.mkdir(parents=True, exist_ok=True)
    for base, batches in segments.items():
        (partition_dir / f"{base:020d}.log").write_bytes(b"".join(batches))
        (partition_dir / f"{base:020d}.index").write_bytes(b"")
        (partition_dir / f"{base:020d}.timeindex").write_bytes(b"")


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- our own data directory -----------------------------------------------------------------
def test_dump_of_a_broker_data_dir(tmp_path, capsysbinary):
    manager = LogManager(tmp_path, segment_bytes=300)
    log = manager.get_or_create("fp", 1)
    log.epoch_cache.assign(0, 0)
    for i in range(6):
        log.append_as_leader(batch([f"0-{i}"]), 0)
    log.epoch_cache.assign(4, log.log_end_offset)
    log.append_as_leader(batch([b"\xff\x00binary", Rec(None)], codec="gzip"), 4)
    manager.get_or_create("fp", 0)
    manager.checkpoint_high_watermarks({("fp", 1): 7, ("fp", 0): 0})
    manager.close()
    code, lines, err = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "n2")
    assert code == 0 and err == ""
    check_shapes(lines)
    assert replicas(lines, "fp", 1) == [(i, f"0-{i}", 0) for i in range(6)] + [
        (6, {"base64": base64.b64encode(b"\xff\x00binary").decode()}, 4),
        (7, None, 4),
    ]
    assert state(lines, "fp", 1) == {
        "kind": "replica-state", "node": "n2", "topic": "fp", "partition": 1,
        "log_end_offset": 8, "high_watermark": 7, "leader_epoch": 4, "epochs": [[0, 0], [4, 6]],
    }
    assert state(lines, "fp", 0)["log_end_offset"] == 0 and state(lines, "fp", 0)["leader_epoch"] is None
    assert {line["node"] for line in lines} == {"n2"}
    # partitions in order, each one's records before its state line
    kinds = [(line["partition"], line["kind"]) for line in lines]
    assert kinds[0] == (0, "replica-state") and kinds[-1] == (1, "replica-state")


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec(tmp_path, capsysbinary, codec):
    values = [f"{codec}-{i}" * (i % 4 + 1) for i in range(50)]
    write_segments(tmp_path / "fp-0", {0: [batch(values[:20], codec=codec, partition_leader_epoch=2),
                                           batch(values[20:], codec=codec, base_offset=20, partition_leader_epoch=3)]})
    code, lines, err = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "n1")
    assert code == 0 and err == ""
    check_shapes(lines)
    assert replicas(lines) == [(i, v, 2 if i < 20 else 3) for i, v in enumerate(values)]
    assert state(lines)["epochs"] == [[2, 0], [3, 20]]


# -- stock Kafka data directories --------------------------------------------------------------
def make_stock_kafka_dir(root: Path) -> None:
    """A Kafka 3.x log dir, upgraded from message format v0/v1 to v2 in place."""
    (root / "meta.properties").write_text("version=0\nbroker.id=2\ncluster.id=abc\n")
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
        (root / name).write_text("0\n0\n")
    (root / "replication-offset-checkpoint").write_text("0\n3\nfp 0 9\nfp 1 4\n__consumer_offsets 0 1\n")
    write_segments(root / "fp-0", {
        0: [legacy_messages(0, 0, [b"v0-a", b"v0-b"]), legacy_wrapper(0, 2, [b"v0-c", b"v0-d"], "snappy-xerial")],
        4: [legacy_messages(1, 4, [b"v1-e"]), legacy_wrapper(1, 5, [b"v1-f", b"v1-g"], "lz4-broken-hc"),
            legacy_wrapper(1, 7, [b"v1-h"], "gzip")],
        8: [batch(["v2-i", "v2-j"], base_offset=8, partition_leader_epoch=5, codec="zstd"),
            control_batch(10, partition_leader_epoch=5),
            batch(["v2-k"], base_offset=11, partition_leader_epoch=6, codec="lz4")],
    })
    (root / "fp-0" / "leader-epoch-checkpoint").write_text("0\n2\n5 8\n6 11\n")
    (root / "fp-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    (root / "fp-0" / "00000000000000000007.snapshot").write_bytes(b"\x00" * 10)
    write_segments(root / "fp-1", {0: [batch(["x"], partition_leader_epoch=0)]})
    (root / "fp-1" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n2 1\n")  # a leader with no writes yet
    write_segments(root / "__consumer_offsets-0",
                   {0: [batch([Rec(b"offset", key=b"group")], partition_leader_epoch=0)]})
    write_segments(root / "fp-0.0123456789abcdef-delete", {0: [batch(["deleted"])]})


def test_stock_kafka_dir_with_legacy_and_v2_segments(tmp_path, capsysbinary):
    make_stock_kafka_dir(tmp_path)
    before = tree_digest(tmp_path)
    code, lines, err = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "kafka2")
    assert code == 0 and err == ""
    check_shapes(lines)
    assert replicas(lines, "fp", 0) == [
        (0, "v0-a", None), (1, "v0-b", None), (2, "v0-c", None), (3, "v0-d", None),
        (4, "v1-e", None), (5, "v1-f", None), (6, "v1-g", None), (7, "v1-h", None),
        (8, "v2-i", 5), (9, "v2-j", 5), (11, "v2-k", 6),  # 10 is a transaction marker
    ]
    fp0 = state(lines, "fp", 0)
    assert (fp0["log_end_offset"], fp0["high_watermark"], fp0["leader_epoch"], fp0["epochs"]) == \
        (12, 9, 6, [[5, 8], [6, 11]])
    fp1 = state(lines, "fp", 1)
    assert (fp1["log_end_offset"], fp1["high_watermark"], fp1["leader_epoch"], fp1["epochs"]) == \
        (1, 1, 2, [[0, 0], [2, 1]])
    assert {(line["topic"], line["partition"]) for line in lines} == {("fp", 0), ("fp", 1)}
    assert tree_digest(tmp_path) == before  # read-only


def test_internal_topics_with_all(tmp_path, capsysbinary):
    make_stock_kafka_dir(tmp_path)
    code, lines, _ = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "k", "--all")
    assert code == 0
    assert replicas(lines, "__consumer_offsets", 0) == [(0, "offset", 0)]
    assert state(lines, "__consumer_offsets", 0)["high_watermark"] == 1


# -- damage ---------------------------------------------------------------------------------------
def test_a_torn_tail_is_reported_and_skipped_without_touching_the_files(tmp_path, capsysbinary):
    whole = batch(["a", "b"], partition_leader_epoch=1)
    torn = batch(["c"], base_offset=2, partition_leader_epoch=1)[:-7]
    write_segments(tmp_path / "fp-0", {0: [whole, torn]})
    before = tree_digest(tmp_path)
    code, lines, err = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "n1")
    assert code == 0
    assert replicas(lines) == [(0, "a", 1), (1, "b", 1)]
    assert state(lines)["log_end_offset"] == 2
    assert "torn tail" in err and "00000000000000000000.log" in err and f"byte {len(whole)}" in err
    assert tree_digest(tmp_path) == before


def test_a_corrupt_batch_stops_the_partition_there(tmp_path, capsysbinary):
    damaged = bytearray(batch(["c", "d"], base_offset=2, partition_leader_epoch=1))
    damaged[-1] ^= 0x20
    write_segments(tmp_path / "fp-0", {
        0: [batch(["a", "b"], partition_leader_epoch=1), bytes(damaged)],
        4: [batch(["e"], base_offset=4, partition_leader_epoch=1)],
    })
    code, lines, err = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "n1")
    assert code == 0
    assert replicas(lines) == [(0, "a", 1), (1, "b", 1)]
    assert state(lines)["log_end_offset"] == 2
    assert "CRC mismatch" in err and "1 segment(s) after 00000000000000000000.log skipped" in err


def test_high_watermark_absent_is_zero_and_beyond_the_log_is_clamped(tmp_path, capsysbinary):
    write_segments(tmp_path / "fp-0", {0: [batch(["a"])]})
    write_segments(tmp_path / "fp-1", {0: [batch(["a", "b"])]})
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nfp 1 50\n")
    _, lines, _ = run_dump(capsysbinary, "--data-dir", str(tmp_path), "--node", "n1")
    assert state(lines, "fp", 0)["high_watermark"] == 0
    assert state(lines, "fp", 1)["high_watermark"] == 2


def test_node_name_defaults(tmp_path, capsysbinary):
    data_dir = tmp_path / "data-n3"
    write_segments(data_dir / "fp-0", {0: [batch(["a"])]})
    _, lines, _ = run_dump(capsysbinary, "--data-dir", str(data_dir))
    assert {line["node"] for line in lines} == {"data-n3"}
    (data_dir / "node").write_text("n7\n")
    _, lines, _ = run_dump(capsysbinary, "--data-dir", str(data_dir))
    assert {line["node"] for line in lines} == {"n7"}


def test_bad_arguments(tmp_path, capsysbinary):
    assert main(["--data-dir", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsysbinary.readouterr().err.decode()
    assert main([]) == 2


@pytest.mark.integration
def test_through_python_dash_m_broker(tmp_path):
    write_segments(tmp_path / "fp-0", {0: [batch(["hello"], partition_leader_epoch=3)]})
    done = subprocess.run(
        [sys.executable, "-m", "fencepost.broker", "dump-log", "--data-dir", str(tmp_path), "--node", "n1"],
        capture_output=True, cwd=ROOT, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert lines[0] == {"kind": "replica", "node": "n1", "topic": "fp", "partition": 0, "offset": 0,
                        "value": "hello", "leader_epoch": 3}
    assert lines[1]["kind"] == "replica-state"


# -- what librdkafka really sends --------------------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_listener(port: int, server: subprocess.Popen) -> None:
    import socket
    import time

    for _ in range(300):
        assert server.poll() is None, "the broker exited during start-up"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the broker did not listen on port {port}")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_batches_from_librdkafka_in_every_codec_through_the_broker(tmp_path):
    """confluent-kafka produces (idempotent, each codec) to `python -m fencepost.broker serve`; dump-log reads it
    all back."""
    from confluent_kafka import Producer

    port = _free_port()
    data_dir = tmp_path / "data"
    server = subprocess.Popen(
        [sys.executable, "-m", "fencepost.broker", "serve", "--node-id", "0", "--listen", f"127.0.0.1:{port}",
         "--data-dir", str(data_dir), "--segment-bytes", "20000", "--log-file", str(tmp_path / "broker.log")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    sent: dict[str, list[str]] = {}
    try:
        _wait_for_listener(port, server)
        for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "compression.type": codec,
                                 "enable.idempotence": True, "linger.ms": 5, "acks": "all"})
            errors: list = []
            values = [f"{codec}-{i}-" + "x" * (i % 40) for i in range(300)]
            for value in values:
                producer.produce(f"t-{codec}", value.encode(), on_delivery=lambda e, m: errors.append(e) if e else None)
            assert producer.flush(60) == 0 and errors == [], errors[:3]
            sent[f"t-{codec}"] = values
    finally:
        server.terminate()
        server.wait(30)
    done = subprocess.run([sys.executable, "-m", "fencepost.broker", "dump-log", "--data-dir", str(data_dir),
                           "--node", "n0"], capture_output=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    check_shapes(lines)
    for topic, values in sent.items():
        epoch = state(lines, topic, 0)["leader_epoch"]
        assert replicas(lines, topic, 0) == [(i, v, epoch) for i, v in enumerate(values)]
        assert state(lines, topic, 0)["log_end_offset"] == len(values)
