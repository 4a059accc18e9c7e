"""The image a docker node runs, and the host folders mounted into it.

By default no registry is needed: the image is a tiny root made here (directory
skeleton, /etc/passwd, group, hosts, nsswitch.conf, protocols, and the
/bin -> usr/bin style links as on this machine) loaded with `docker import`;
the programs come from this machine's folders bind-mounted read-only at the
same paths (/usr, /etc/alternatives, /etc/ld.so.cache, the Python installation
of `sys.executable`, the project checkout), so `sys.executable` runs inside
with the same packages. The tag is `fencepost-node:<hash of the tarball>`: it
is built once and reused while the tag exists (images are a cache; nothing here
removes them).

With `image=<name>` a user-built image is used instead (e.g. from
clusters/hosts/docker/Dockerfile): nothing of the host is mounted and the
interpreter is `python3` (or `python=`).
"""
from __future__ import annotations

import hashlib
import io
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from fencepost import IMPORT_ROOT
from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts.docker.errors import DOCKER_ERRORS, explain

BASE_REPOSITORY = "fencepost-node"
IMAGE_LABEL = "fencepost"  # value "1" on every image built here
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # merged-/usr links, or real folders to mount
HOST_FILES = ("/usr", "/etc/alternatives", "/etc/ld.so.cache")  # iptables goes through /etc/alternatives
PROJECT_ROOT = IMPORT_ROOT  # the folder holding the `fencepost` package

SKELETON_DIRS = {"dev": 0o755, "etc": 0o755, "home": 0o755, "mnt": 0o755, "opt": 0o755, "proc": 0o755,
                 "root": 0o700, "run": 0o755, "srv": 0o755, "sys": 0o755, "tmp": 0o1777, "usr": 0o755,
                 "var": 0o755, "var/lib": 0o755, "var/log": 0o755, "var/tmp": 0o1777}
SKELETON_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "etc/hosts": "127.0.0.1\tlocalhost\n",
    "etc/nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                         "networks: files\nprotocols: files\nservices: files\n",
    "etc/protocols": "ip\t0\tIP\nicmp\t1\tICMP\ntcp\t6\tTCP\nudp\t17\tUDP\nipv6-icmp\t58\tIPv6-ICMP\n",
}


@dataclass(frozen=True)
class NodeImage:
    """What a node container is made from: the image, the interpreter inside, what is mounted
    read-only from this machine (same path inside), and extra environment."""
    tag: str
    python: str
    mounts: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class BaseImage:
    tag: str
    built: bool  # False when the tag existed already


def base_root_tar(root: Path = Path("/")) -> bytes:
    """The minimal root filesystem as an uncompressed tarball, byte-for-byte the same for the
    same machine layout (fixed times and owners, sorted entries)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, mode in sorted(SKELETON_DIRS.items()):
            entry = tarfile.TarInfo(name)
            entry.type, entry.mode = tarfile.DIRTYPE, mode
            tar.addfile(entry)
        entry = tarfile.TarInfo("var/run")
        entry.type, entry.linkname, entry.mode = tarfile.SYMTYPE, "/run", 0o777
        tar.addfile(entry)
        for name in TOP_LINKS:
            path = root / name
            if path.is_symlink():
                entry = tarfile.TarInfo(name)
                entry.type, entry.linkname, entry.mode = tarfile.SYMTYPE, str(path.readlink()), 0o777
                tar.addfile(entry)
        for name, text in sorted(SKELETON_FILES.items()):
            data = text.encode()
            entry = tarfile.TarInfo(name)
            entry.size, entry.mode = len(data), 0o644
            tar.addfile(entry, io.BytesIO(data))
    return buffer.getvalue()


def image_changes() -> list[str]:
    return [f"LABEL {IMAGE_LABEL}=1", f"ENV PATH={PATH}"]


def ensure_base_image(client: docker.DockerClient, repository: str = BASE_REPOSITORY) -> BaseImage:
    """The offline base image, imported unless its tag exists already."""
    data = base_root_tar()
    changes = image_changes()
    digest = hashlib.sha256(data + "\n".join(changes).encode()).hexdigest()[:12]
    tag = f"{repository}:{digest}"
    try:
        client.images.get(tag)
        return BaseImage(tag, built=False)
    except docker.errors.ImageNotFound:
        pass
    try:
        client.api.import_image_from_data(data, repository=repository, tag=digest, changes=changes)
        client.images.get(tag)
    except DOCKER_ERRORS as e:
        raise ClusterConfigError(f"could not import the docker node image {tag} from its local tarball: "
                                 f"{explain(e)}") from None
    return BaseImage(tag, built=True)


def host_mounts(project_root: Path = PROJECT_ROOT, root: Path = Path("/")) -> tuple[str, ...]:
    """This machine's folders a base-image node needs, read-only at the same paths: the system
    (/usr, real top-level lib/bin folders), the interpreter's installation, the project checkout.
    A folder inside another one on the list is left out (the outer mount covers it)."""
    wanted = [root / p.lstrip("/") for p in HOST_FILES]
    wanted += [root / name for name in TOP_LINKS if (root / name).is_dir() and not (root / name).is_symlink()]
    wanted += [Path(sys.prefix), Path(sys.base_prefix), project_root]
    present = sorted({str(p) for p in wanted if p.exists()})
    kept: list[str] = []
    for path in present:  # sorted: an outer folder comes before what is inside it
        if not any(path == outer or path.startswith(outer.rstrip("/") + "/") for outer in kept):
            kept.append(path)
    return tuple(kept)


def node_image(client: docker.DockerClient, image: str | None, python: str | None) -> NodeImage:
    """The image of the `image=` option (checked to exist here), or the offline base with its mounts."""
    if image is None:
        if python is not None:
            raise ClusterConfigError("the docker option python= only goes with image=: the default image "
                                     f"runs this machine's interpreter ({sys.executable})")
        base = ensure_base_image(client)
        return NodeImage(base.tag, sys.executable, host_mounts(), (("PYTHONPATH", str(PROJECT_ROOT)),))
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise ClusterConfigError(
            f"docker image {image!r} (option image=) is not on this machine: build it in the project "
            f"checkout with `git archive HEAD | docker build -f clusters/hosts/docker/Dockerfile -t {image} -` "
            "(docs/hosts/docker.md), or leave image= out to use the offline base image") from None
    except DOCKER_ERRORS as e:
        raise ClusterConfigError(f"docker image {image!r} (option image=): {explain(e)}") from None
    return NodeImage(image, python or "python3")
