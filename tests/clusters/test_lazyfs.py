"""The lazy filesystem on real FUSE mounts: after a power cut (drop, kill, unmount, remount) the
tree is exactly its durable state, under both metadata models, and the mount behaves as a disk
before it (reads, locks, mmap, sendfile, fallocate, a 100 MB file)."""
from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.lazyfs import LazyMount
from fencepost.clusters.lazyfs.mount import daemon_of
from fencepost.clusters.lazyfs.mounts import lazy_mounts, mounted_at
from tests.support.lazyfs_support import CLUSTER, DIR, backing_tree, fsync_path, tree, write
from tests.support.paths import ROOT, SUPPORT

pytestmark = [pytest.mark.integration, pytest.mark.root]
PROBE = SUPPORT / "lazyfs_probe.py"

MAPPED_AFTER = b"M1" + bytes(8190)
# What the probe's writes leave after a cut. journal: every entry change up to the probe's last
# fsync (sub/new.txt) is durable. strict: the root's entries as of its one folder fsync (after
# ckpt's rename, before ckpt2's), sub/ never fsynced, so sub/new.txt is lost with its data.
EXPECTED = {
    "journal": {
        "keep.bin": b"k" * 8192, "doomed.txt": b"doomed", "trunc.bin": b"t" * 8192,
        "trunc-synced.bin": b"s" * 100, "mapped.index": MAPPED_AFTER, "sub": DIR, "sub/new.txt": b"n",
        "synced.bin": b"a" * 5000, "datasynced.bin": b"d" * 6000, "unsynced.bin": b"",
        "ckpt": b"one", "ckpt2": b"two",
    },
    "strict": {
        "keep.bin": b"k" * 8192, "doomed.txt": b"doomed", "trunc.bin": b"t" * 8192,
        "trunc-synced.bin": b"s" * 100, "mapped.index": MAPPED_AFTER, "sub": DIR,
        "synced.bin": b"a" * 5000, "datasynced.bin": b"d" * 6000, "unsynced.bin": b"",
        "ckpt": b"one", "ckpt2.tmp": b"two",
    },
}


def start_probe(root: Path) -> subprocess.Popen:
    probe = subprocess.Popen([sys.executable, str(PROBE), str(root)], stdout=subprocess.PIPE, text=True)
    line = probe.stdout.readline()
    if line.strip() != "ready":
        probe.kill()
        raise AssertionError(f"the probe did not finish its writes: {line!r} (exit {probe.wait()})")
    return probe


def killer(process: subprocess.Popen):
    def kill() -> None:
        process.kill()
        process.wait()
    return kill


@pytest.mark.parametrize("model", ["journal", "strict"])
def test_a_cut_leaves_exactly_the_durable_state(lazy, model):
    m = lazy(model)
    root = m.mountpoint
    write(root / "keep.bin", b"k" * 8192)
    write(root / "doomed.txt", b"doomed")
    write(root / "trunc.bin", b"t" * 8192)
    write(root / "trunc-synced.bin", b"s" * 8192)
    write(root / "mapped.index", bytes(8192))
    (root / "sub").mkdir()
    m.checkpoint()
    assert m.stats()["dirty_files"] == 0 and m.stats()["pending_entries"] == 0
    probe = start_probe(root)
    # before the cut every write is visible, synced or not (the mapped page through the page cache)
    seen = tree(root)
    assert seen["synced.bin"] == b"a" * 5000 + b"b" * 3000
    assert seen["unsynced.bin"] == b"u" * 7000 and seen["after.txt"] == b"after"
    assert seen["keep.bin"][:12] == b"X" * 10 + b"kk" and seen["trunc.bin"] == b"t" * 100
    assert seen["mapped.index"][:2] == b"M1" and seen["mapped.index"][4096:4098] == b"M2"
    assert "doomed.txt" not in seen and seen["ckpt2"] == b"two"
    stats = m.stats()
    assert stats["dirty_files"] >= 3 and stats["dirty_bytes"] >= 7000 and stats["pending_entries"] >= 2
    report = m.power_cut(killer(probe))
    assert tree(root) == EXPECTED[model]
    assert backing_tree(m.backing) == EXPECTED[model]
    assert sorted(os.listdir(m.backing / ".fencepost-lazyfs" / "trash")) == []
    assert report.lost_files >= 3 and report.removed_entries >= 1 and report.restored_entries >= 1
    assert report.daemon_after != report.daemon_before and not report.lazy_unmount
    assert m.stats()["dirty_files"] == 0


def test_journal_keeps_a_new_entry_only_when_some_fsync_followed(lazy):
    m = lazy("journal")
    root = m.mountpoint
    write(root / "other.bin", b"o")
    m.checkpoint()
    write(root / "a.txt", b"never synced")
    m.power_cut()
    assert tree(root) == {"other.bin": b"o"}
    write(root / "b.txt", b"data never synced")
    write(root / "other.bin", b"synced", sync=True)  # any fsync: b.txt's entry becomes durable
    write(root / "c.txt", b"after the fsync")
    m.power_cut()
    assert tree(root) == {"other.bin": b"synced", "b.txt": b""}


def test_strict_keeps_a_new_entry_only_after_its_folder_fsync(lazy):
    m = lazy("strict")
    root = m.mountpoint
    write(root / "other.bin", b"o")
    m.checkpoint()
    write(root / "b.txt", b"synced data, unsynced entry", sync=True)
    write(root / "other.bin", b"synced", sync=True)
    m.power_cut()
    assert tree(root) == {"other.bin": b"synced"}
    write(root / "c.txt", b"data never synced")
    fsync_path(root)
    m.power_cut()
    assert tree(root) == {"other.bin": b"synced", "c.txt": b""}


@pytest.mark.parametrize("model", ["journal", "strict"])
def test_a_rename_over_a_file_without_a_durable_point_brings_the_old_file_back(lazy, model):
    m = lazy(model)
    root = m.mountpoint
    write(root / "state", b"old")
    m.checkpoint()
    write(root / "state.tmp", b"new", sync=True)  # journal: this fsync makes state.tmp's entry durable
    os.rename(root / "state.tmp", root / "state")
    assert tree(root) == {"state": b"new"}
    m.power_cut()
    assert tree(root) == ({"state": b"old", "state.tmp": b"new"} if model == "journal" else {"state": b"old"})
    write(root / "state.tmp", b"newer", sync=True)
    os.rename(root / "state.tmp", root / "state")
    fsync_path(root)
    m.power_cut()
    assert tree(root) == {"state": b"newer"}


@pytest.mark.parametrize("model", ["journal", "strict"])
def test_folders_links_and_removals_come_back_as_they_were_durable(lazy, model):
    m = lazy(model)
    root = m.mountpoint
    (root / "d" / "e").mkdir(parents=True)
    (root / "empty").mkdir()
    write(root / "d" / "f", b"f")
    os.link(root / "d" / "f", root / "d" / "f2")
    m.checkpoint()
    before = tree(root)
    (root / "empty").rmdir()
    os.unlink(root / "d" / "f2")
    os.rename(root / "d" / "e", root / "e-moved")
    os.rename(root / "d", root / "d-renamed")
    (root / "new" / "deep").mkdir(parents=True)
    write(root / "new" / "deep" / "x", b"x", sync=model == "strict")  # strict: still gone, no folder fsync
    os.symlink("d-renamed/f", root / "link")
    m.power_cut()
    assert tree(root) == before
    assert os.stat(root / "d" / "f").st_ino == os.stat(root / "d" / "f2").st_ino
    assert os.stat(root / "d" / "f").st_nlink == 2


def test_a_checkpoint_and_a_clean_unmount_keep_everything(lazy):
    m = lazy("strict")
    root = m.mountpoint
    (root / "d").mkdir()
    write(root / "d" / "a", b"a" * 10000)
    m.checkpoint()
    assert m.stats() | {"ok": True} == m.stats() and m.stats()["dirty_bytes"] == 0
    m.power_cut()
    assert tree(root) == {"d": DIR, "d/a": b"a" * 10000}
    write(root / "b", b"b" * 5000)
    os.truncate(root / "d" / "a", 3)
    m.unmount()
    assert mounted_at(root) is None
    assert (m.backing / "b").read_bytes() == b"b" * 5000 and (m.backing / "d" / "a").read_bytes() == b"aaa"


def test_writes_after_a_drop_get_eio_and_reads_before_it_see_unsynced_data(lazy):
    m = lazy()
    path = m.mountpoint / "f"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, b"unsynced")
        assert os.pread(fd, 100, 0) == b"unsynced" and path.read_bytes() == b"unsynced"
        lost = m.drop()
        assert lost["lost_files"] == 1 and lost["lost_bytes"] >= len(b"unsynced")
        for attempt in (lambda: os.write(fd, b"more"), lambda: os.pread(fd, 10, 0), lambda: os.fsync(fd),
                        lambda: os.listdir(m.mountpoint), lambda: path.stat()):
            with pytest.raises(OSError) as e:
                attempt()
            assert e.value.errno == errno.EIO
    finally:
        try:
            os.close(fd)
        except OSError as e:
            assert e.errno == errno.EIO
    m.unmount()
    assert not (m.backing / "f").exists()


def test_a_file_lock_excludes_another_process(lazy):
    m = lazy()
    lock = m.mountpoint / ".lock"
    lock.touch()
    program = ("import fcntl, sys\nf = open(sys.argv[1], 'a')\n"
               "for kind in ('lockf', 'flock'):\n"
               "    try:\n"
               "        (fcntl.lockf if kind == 'lockf' else fcntl.flock)(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
               "        print(kind, 'got')\n"
               "    except OSError:\n"
               "        print(kind, 'busy')\n")

    def other() -> str:
        return subprocess.run([sys.executable, "-c", program, str(lock)], capture_output=True, text=True,
                              check=True).stdout
    with open(lock, "a") as mine:
        fcntl.lockf(mine, fcntl.LOCK_EX | fcntl.LOCK_NB)  # Kafka's FileChannel.tryLock: fcntl F_SETLK
        fcntl.flock(mine, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert other() == "lockf busy\nflock busy\n"
    assert other() == "lockf got\nflock got\n"


def test_a_100_mb_file_written_and_fsynced_survives_a_cut(lazy):
    m = lazy()
    path = m.mountpoint / "big.bin"
    digest = hashlib.sha256()
    chunk = os.urandom(1 << 20)
    with open(path, "wb", buffering=0) as f:
        for i in range(100):
            block = chunk[i:] + chunk[:i]
            f.write(block)
            digest.update(block)
        os.fsync(f.fileno())
        f.write(chunk)  # one more MiB, never synced
    assert m.stats()["dirty_bytes"] == 1 << 20
    m.power_cut()
    assert path.stat().st_size == 100 << 20
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).digest() == digest.digest()


def test_sendfile_append_and_fallocate_behave_as_on_a_disk(lazy):
    m = lazy()
    path = m.mountpoint / "segment.log"
    write(path, b"0123456789", sync=True)
    with open(path, "ab") as f:  # O_APPEND
        f.write(b"abc")
    out_a, out_b = socket.socketpair()
    with out_a, out_b, open(path, "rb") as f:  # Kafka sends segments to consumers with sendfile
        assert os.sendfile(out_a.fileno(), f.fileno(), 0, 13) == 13
        assert out_b.recv(100) == b"0123456789abc"
    with open(path, "r+b") as f:
        os.posix_fallocate(f.fileno(), 0, 4096)
        assert os.fstat(f.fileno()).st_size == 4096
    assert path.read_bytes() == b"0123456789abc" + bytes(4096 - 13)
    m.power_cut()
    assert path.read_bytes() == b"0123456789"


def test_a_truncating_open_and_a_truncate_are_undone_by_a_cut(lazy):
    m = lazy()
    write(m.mountpoint / "a", b"durable a")
    write(m.mountpoint / "b", b"durable b")
    m.checkpoint()
    write(m.mountpoint / "a", b"x")  # open(O_TRUNC): the kernel asks for the truncation with the open
    os.truncate(m.mountpoint / "b", 3)
    with open(m.mountpoint / "b", "ab") as f:
        f.write(b"!")
    assert tree(m.mountpoint) == {"a": b"x", "b": b"dur!"}
    m.power_cut()
    assert tree(m.mountpoint) == {"a": b"durable a", "b": b"durable b"}


def test_a_mapped_file_is_durable_after_msync(lazy):
    import mmap
    m = lazy()
    path = m.mountpoint / "00000000000000000000.index"
    write(path, bytes(4096 * 3), sync=True)
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 4096 * 3) as view:
        view[0:4] = b"sync"
        view.flush()  # MappedByteBuffer.force()
        view[8192:8196] = b"lost"
    m.power_cut()
    data = path.read_bytes()
    assert data[:4] == b"sync" and data[8192:8196] == bytes(4) and len(data) == 4096 * 3
    other = m.mountpoint / "00000000000000000000.log"  # direct_io: the kernel refuses to map it
    write(other, bytes(4096), sync=True)
    with open(other, "r+b") as f, pytest.raises(OSError) as refused:
        mmap.mmap(f.fileno(), 4096)
    assert refused.value.errno == errno.ENODEV


def test_concurrent_writers_entry_changes_and_stats_keep_every_synced_byte(lazy):
    import threading
    m = lazy("strict")
    root = m.mountpoint
    (root / "meta").mkdir()
    fsync_path(root)
    errors: list[BaseException] = []
    done = threading.Event()

    def guarded(work):
        def run():
            try:
                work()
            except BaseException as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)
        return threading.Thread(target=run)

    def writer(i: int) -> None:
        with open(root / f"w{i}.bin", "wb", buffering=0) as f:
            for j in range(64):
                f.write(bytes([i + j & 0xFF]) * 65536)
                if j % 16 == 15:
                    os.fsync(f.fileno())
            f.write(b"tail, never synced")

    def shared() -> None:  # four threads write disjoint pages of one file
        with open(root / "shared.bin", "r+b", buffering=0) as f:
            for k in range(256):
                os.pwrite(f.fileno(), bytes([k]) * 4096, k * 4096)
            os.fsync(f.fileno())

    def entries() -> None:
        for k in range(200):
            write(root / "meta" / f"t{k}", b"x")
            os.rename(root / "meta" / f"t{k}", root / "meta" / f"r{k % 10}")
            if k % 3 == 0:
                os.unlink(root / "meta" / f"r{k % 10}")
        fsync_path(root / "meta")

    def stats() -> None:
        while not done.is_set():
            assert m.stats()["ok"]

    write(root / "shared.bin", bytes(256 * 4096), sync=True)
    fsync_path(root)
    threads = [guarded(lambda i=i: writer(i)) for i in range(4)] + [guarded(shared) for _ in range(2)]
    threads += [guarded(entries), guarded(stats)]
    for t in threads[:-1]:
        t.start()
    threads[-1].start()
    for t in threads[:-1]:
        t.join()
    done.set()
    threads[-1].join()
    assert errors == []
    fsync_path(root)  # strict: the writers' files are named durably only now
    expected_meta = sorted(os.listdir(root / "meta"))
    m.power_cut()
    for i in range(4):
        assert (root / f"w{i}.bin").read_bytes() == b"".join(bytes([i + j & 0xFF]) * 65536 for j in range(64))
    assert (root / "shared.bin").read_bytes() == b"".join(bytes([k]) * 4096 for k in range(256))
    assert sorted(os.listdir(root / "meta")) == expected_meta


def test_a_busy_mount_is_detached_lazily_and_mounted_again(lazy):
    m = lazy()
    write(m.mountpoint / "a", b"a", sync=True)
    squatter = subprocess.Popen(["sleep", "600"], cwd=m.mountpoint)
    try:
        report = m.power_cut()  # kill() spares the squatter: the old mount stays busy
        assert report.lazy_unmount
        assert tree(m.mountpoint) == {"a": b"a"}
        assert daemon_of(report.daemon_before) is None  # the old daemon was made to exit
    finally:
        squatter.kill()
        squatter.wait()


def test_a_copy_of_the_mount_table_does_not_keep_the_old_daemon_alive(lazy):
    """`ip netns exec` gives its process a copy of the mount table (`unshare -m` does the same):
    the old mount lives on there after the unmount, so the driver must end the old daemon."""
    m = lazy()
    write(m.mountpoint / "a", b"a", sync=True)
    copy = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "600"])
    try:
        time.sleep(0.3)  # let it copy the table
        report = m.power_cut()
        assert not report.lazy_unmount and daemon_of(report.daemon_before) is None
        assert tree(m.mountpoint) == {"a": b"a"}
    finally:
        copy.send_signal(signal.SIGKILL)
        copy.wait()


def test_mounts_that_cannot_be_made_say_why(lazy, tmp_path):
    m = lazy()
    with pytest.raises(ClusterConfigError, match=f"lazy mount of cluster {CLUSTER} already"):
        LazyMount.mount(m.mountpoint, tmp_path / "elsewhere", CLUSTER)
    with pytest.raises(ClusterConfigError, match="served by another fencepost-lazyfs"):
        LazyMount.mount(tmp_path / "second-mnt", m.backing, CLUSTER)
    assert not list((tmp_path / "second-mnt").iterdir())
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    with pytest.raises(ClusterConfigError, match="is not empty"):
        LazyMount.mount(full, tmp_path / "b2", CLUSTER)
    with pytest.raises(ClusterConfigError, match="must not contain each other"):
        LazyMount.mount(tmp_path / "b3" / "inside", tmp_path / "b3", CLUSTER)
    assert [e.mountpoint for e in lazy_mounts([CLUSTER])] == [str(m.mountpoint)]
    assert tree(m.mountpoint) == {}  # the first mount is unharmed


def test_the_state_folder_is_hidden_and_refused(lazy):
    m = lazy()
    assert os.listdir(m.mountpoint) == []
    with pytest.raises(FileNotFoundError):
        os.stat(m.mountpoint / ".fencepost-lazyfs")
    with pytest.raises(PermissionError):
        os.mkdir(m.mountpoint / ".fencepost-lazyfs")
    assert (m.backing / ".fencepost-lazyfs" / "control.sock").exists()


def test_another_process_attaches_by_state_and_cuts(lazy):
    m = lazy()
    write(m.mountpoint / "a", b"synced", sync=True)
    write(m.mountpoint / "b", b"unsynced")
    program = ("import json, sys\nfrom fencepost.clusters.lazyfs import LazyMount\n"
               "m = LazyMount.attach(json.loads(sys.argv[1]))\nr = m.power_cut()\nprint(json.dumps(m.state()))\n")
    import json
    done = subprocess.run([sys.executable, "-c", program, json.dumps(m.state())], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    m2 = LazyMount.attach(json.loads(done.stdout))
    assert m2.pid != m.pid and tree(m2.mountpoint) == {"a": b"synced"}
    m2.unmount()
