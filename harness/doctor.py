"""What this machine can run: one `Finding` per thing fencepost may need, found by
asking the machine itself (never remembered), each with what it is needed for and
the command that fixes it when it is missing.

The netns requirements are the netns backend's own (`clusters.netns_unavailable`,
which reads `clusters.hosts.netns.REQUIRED_TOOLS`); the versions and the reader are
harness/provenance.py's. The Debian packages named in fixes are those scripts/provision
installs (as root: `bash scripts/provision`).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

DOCKER_PING_TIMEOUT_S = 5.0
FUSE_DEVICE = Path("/dev/fuse")
PROVISION = "bash scripts/provision (as root)"


@dataclass(frozen=True, slots=True)
class Finding:
    name: str
    ok: bool
    detail: str  # what was found (a path, a version, why not)
    needed_for: str
    fix: str = ""  # the command that fixes it; "" when ok

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def examine() -> list[Finding]:
    """Every finding, in the order `fencepost doctor` prints them."""
    checks: list[Callable[[], list[Finding]]] = [_root, _netns, _netem, _docker, _fuse, _java_and_maven,
                                                 _chromium, _c_reader]
    return [finding for check in checks for finding in check()]


def _root() -> list[Finding]:
    uid = os.geteuid()
    return [Finding("root", uid == 0, f"uid {uid}", "the netns backend (partitions), starting dockerd",
                    "" if uid == 0 else "run fencepost as root (sudo), or use --backend process")]


def _netns() -> list[Finding]:
    from fencepost.clusters import netns_unavailable, required_tools

    found = []
    for tool, package in required_tools("netns").items():
        path = shutil.which(tool)
        found.append(Finding(tool, path is not None, path or "not on PATH", "the netns backend",
                             "" if path else f"apt-get install {package}, or {PROVISION}"))
    reason = netns_unavailable()
    found.append(Finding("netns backend", reason is None, reason or "usable: partitions, kill, pause",
                         "fencepost run's default backend, with network partitions",
                         "" if reason is None else "fix the lines above; meanwhile --backend process "
                                                   "runs kill and pause without partitions"))
    return found


def _netem() -> list[Finding]:
    """The kernel's netem qdisc, probed as a run naming the netem fault probes it (only as root,
    where the netns backend runs)."""
    from fencepost.clusters import kernel_shaping_unavailable

    if os.geteuid() != 0:
        return []
    needed = "the netem fault (delay, loss, duplication, reordering)"
    missing = [tool for tool in ("unshare", "tc") if shutil.which(tool) is None]
    if missing:
        return [Finding("netem", False, f"cannot tell: {' and '.join(missing)} not on PATH", needed,
                        f"apt-get install util-linux iproute2, or {PROVISION}")]
    reason = kernel_shaping_unavailable("netns")
    return [Finding("netem", reason is None, reason or "this kernel's netem qdisc shapes packets", needed,
                    "" if reason is None else "run on a kernel with CONFIG_NET_SCH_NETEM (most distributions "
                                              "load sch_netem on demand); every other fault runs without it")]


def _docker() -> list[Finding]:
    import docker
    import docker.errors

    needed = "the docker backend (--backend docker)"
    if shutil.which("dockerd") is None and shutil.which("docker") is None and not os.environ.get("DOCKER_HOST"):
        return [Finding("Docker daemon", False, "docker is not installed", needed,
                        f"apt-get install docker.io, or {PROVISION}; then start dockerd")]
    try:
        # the stub says int; the client hands it to requests, which takes seconds as a float
        client = docker.from_env(timeout=DOCKER_PING_TIMEOUT_S)  # type: ignore[arg-type]
        try:
            client.ping()
            version = client.version().get("Version", "?")
        finally:
            client.close()
    except (docker.errors.DockerException, OSError) as e:
        return [Finding("Docker daemon", False, f"none answers ({_first_line(e)})", needed,
                        "start it: dockerd & (as root), or systemctl start docker")]
    return [Finding("Docker daemon", True, f"answers, Docker {version}", needed)]


def _fuse() -> list[Finding]:
    try:  # the lazy filesystem's own rule (clusters/lazyfs), where this fencepost has it
        from fencepost.clusters import check_device
    except ImportError:
        check_device = None
    if check_device is not None:
        from fencepost.clusters import ClusterConfigError

        try:
            check_device()
        except ClusterConfigError as e:
            return [Finding("/dev/fuse", False, str(e).split(":")[0], "the lazy filesystem of power cuts "
                            "(a FUSE mount)", str(e))]
        return [Finding("/dev/fuse", True, "present", "the lazy filesystem of power cuts (a FUSE mount)")]
    present = FUSE_DEVICE.exists()
    usable = present and os.access(FUSE_DEVICE, os.R_OK | os.W_OK)
    detail = "read-write" if usable else ("present, not readable and writable by this user" if present
                                          else "missing")
    return [Finding("/dev/fuse", usable, detail,
                    "filesystems in user space (FUSE), e.g. Docker's fuse-overlayfs storage where the "
                    "kernel's overlayfs is unavailable",
                    "" if usable else "modprobe fuse (as root), or give a container --device /dev/fuse")]


def _java_and_maven() -> list[Finding]:
    from fencepost.harness.provenance import java_version

    java = shutil.which("java")
    version = java_version(java) if java else None
    found = [Finding("java", java is not None and version is not None,
                     f"{java}, version {version}" if java and version else (java and f"{java} gives no version")
                     or "not on PATH", "stock Apache Kafka (--system kafka:VERSION), Spark (fencepost analyze)",
                     "" if java and version else f"apt-get install openjdk-17-jdk-headless, or {PROVISION}")]
    mvn = shutil.which("mvn")
    found.append(Finding("mvn", mvn is not None, mvn or "not on PATH",
                         "fetching Kafka's jars for --system kafka:VERSION (not needed with --kafka-home)",
                         "" if mvn else f"apt-get install maven, or {PROVISION}"))
    return found


def _chromium() -> list[Finding]:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    return [Finding("chromium", path is not None, path or "not on PATH",
                    "the browser tests of the report (tests/harness/test_browser_report.py); "
                    "not needed to view reports",
                    "" if path else f"apt-get install chromium, or {PROVISION}")]


def _c_reader() -> list[Finding]:
    from importlib.util import find_spec

    from fencepost.harness.provenance import history_reader

    built = find_spec("fencepost.harness._native") is not None
    return [Finding("C reader", built, history_reader(),
                    "fencepost check reading history.jsonl and final.jsonl about twice as fast",
                    "" if built else "install a C compiler (apt-get install gcc), then "
                                               "pip install -e . again")]


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:160] if text else type(error).__name__
