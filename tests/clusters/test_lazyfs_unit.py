"""The lazy filesystem's pure parts (mount table, options, names) and its build: what is missing
is named with the Debian package that brings it, the daemon compiles with -Wall -Wextra clean,
into a cache folder keyed by its sources, and refuses bad arguments before it mounts anything."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.lazyfs import build, control, mounts
from fencepost.clusters.lazyfs.mount import LazyOptions, check_cluster

MOUNTINFO = (
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "43 27 0:39 / /tmp/with\\040space/m rw,nosuid - fuse.fencepost-lazyfs fencepost-lazyfs:c1 rw,user_id=0\n"
    "44 27 0:40 / /tmp/deeper/m/n rw - fuse.fencepost-lazyfs fencepost-lazyfs:c2 rw\n"
    "45 27 0:41 / /tmp/other rw - fuse.sshfs user@host: rw\n"
    "46 27 0:42 / /tmp/fake rw - fuse.other fencepost-lazyfs:c1 rw\n"
)


def test_the_mount_table_says_which_mounts_are_whose():
    entries = mounts.parse_mountinfo(MOUNTINFO)
    assert [e.mountpoint for e in entries] == ["/proc", "/tmp/with space/m", "/tmp/deeper/m/n", "/tmp/other",
                                               "/tmp/fake"]
    assert [e.cluster for e in entries] == [None, "c1", "c2", None, None]
    assert mounts.source_for("c1") == "fencepost-lazyfs:c1"
    assert mounts.unescape("a\\011b\\134c") == "a\tb\\c"


def test_options_are_checked_and_survive_the_state_round_trip():
    options = LazyOptions(model="strict", mmap_suffixes=(".idx",), cache_limit_mb=64)
    assert options.checked() is options
    assert options.argv() == ["--model", "strict", "--cache-limit-mb", "64", "--mmap-suffix", ".idx"]
    assert LazyOptions(passthrough=True).argv()[-1] == "--passthrough"
    assert LazyOptions.from_dict({"model": "strict", "mmap_suffixes": [".idx"], "cache_limit_mb": 64,
                                  "passthrough": False}) == options
    for bad, words in ((LazyOptions(model="ext4"), "journal or strict"), (LazyOptions(mmap_suffixes=("a/b",)),
                       "file name endings"), (LazyOptions(cache_limit_mb=-1), r"0 \(no limit\)")):
        with pytest.raises(ClusterConfigError, match=words):
            bad.checked()
    assert check_cluster("run-abc_1.x") == "run-abc_1.x"
    for bad in ("", "a,b", "a b", "-a", "x" * 101):
        with pytest.raises(ClusterConfigError, match="cannot name a lazy mount"):
            check_cluster(bad)


def test_a_missing_device_names_the_package_and_the_container_flag():
    with pytest.raises(ClusterConfigError, match=r"/nonexistent/fuse is missing.*apt-get install fuse3.*--device"):
        build.check_device("/nonexistent/fuse")


def test_missing_build_tools_name_their_debian_packages(monkeypatch, tmp_path):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    with pytest.raises(ClusterConfigError, match="apt-get install gcc"):
        build.compiler()
    with pytest.raises(ClusterConfigError, match="apt-get install pkg-config"):
        build.fuse_flags()


@pytest.mark.integration
def test_missing_libfuse3_headers_name_libfuse3_dev(monkeypatch, tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config is not installed (scripts/provision installs it)")
    monkeypatch.setenv("PKG_CONFIG_LIBDIR", str(tmp_path))  # a pkg-config that knows no package
    monkeypatch.setenv("PKG_CONFIG_PATH", "")
    with pytest.raises(ClusterConfigError, match="apt-get install libfuse3-dev"):
        build.fuse_flags()


def test_the_cache_folder_is_keyed_by_sources_and_flags(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build.cache_root() == tmp_path / "xdg" / "fencepost" / "lazyfs"
    copy = tmp_path / "src"
    shutil.copytree(build.HERE, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    first = build.source_hash(copy)
    assert first == build.source_hash(build.HERE) and len(first) == 16
    assert build.source_hash(copy, (*build.CFLAGS, "-O0")) != first
    (copy / "ops.c").write_text((copy / "ops.c").read_text() + "\n/* changed */\n")
    assert build.source_hash(copy) != first


def needs_compiler() -> None:
    try:
        build.compiler()
        build.fuse_flags()
    except ClusterConfigError as e:
        pytest.skip(str(e))


@pytest.mark.integration
def test_the_daemon_compiles_without_a_warning_and_once_per_source(tmp_path):
    needs_compiler()
    argv = build.compile_command(tmp_path / "strict-build", extra=("-Werror",))
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    exe = build.daemon_binary(cache=tmp_path / "cache")
    assert exe == tmp_path / "cache" / build.source_hash() / build.BINARY and os.access(exe, os.X_OK)
    built = exe.stat().st_mtime_ns
    assert build.daemon_binary(cache=tmp_path / "cache") == exe and exe.stat().st_mtime_ns == built
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [build.source_hash()]  # no half-made folders


@pytest.mark.integration
def test_the_daemon_refuses_bad_arguments_before_mounting(tmp_path):
    needs_compiler()
    exe = build.daemon_binary()
    (tmp_path / "b" / "inner").mkdir(parents=True)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)
    for args, words in (((str(tmp_path / "b"), str(tmp_path / "m"), "--model", "ext4"), "choose journal or strict"),
                        ((str(tmp_path / "b"), str(tmp_path / "b" / "inner")), "must not contain each other"),
                        ((str(tmp_path / "nowhere"), str(tmp_path / "b")), "backing folder"),
                        ((str(tmp_path / "b"),), "usage")):
        done = run(*args)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
    assert not (tmp_path / "b" / ".fencepost-lazyfs" / "control.sock").exists()


def test_a_backing_folder_without_a_daemon_does_not_answer(tmp_path):
    with pytest.raises(HostError, match="did not answer 'stats'.*fencepost cleanup"):
        control.send(tmp_path, "stats", timeout=1)
    with pytest.raises(ValueError, match="unknown lazy filesystem command"):
        control.send(tmp_path, "format")


def test_the_users_of_a_folder_are_the_processes_inside_it(tmp_path):
    inside = subprocess.Popen(["sleep", "30"], cwd=tmp_path)
    try:
        assert inside.pid in mounts.users(tmp_path)
        assert inside.pid not in mounts.users(tmp_path / "elsewhere")
    finally:
        inside.kill()
        inside.wait()
