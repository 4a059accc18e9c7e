"""Where a run of a campaign runs when several run at once (`--parallel N`): slot k of N
gets its own network, the k-th block after the campaign's first subnet, of the same size
(10.77.0.0/24, 10.77.1.0/24, ...), so that runs side by side never share addresses; their
clusters' names are their own already (run-<6 hex of the run directory>).

Only backends with a subnet take one: netns always (its default subnet when the spec names
none), docker when the spec names a subnet (else Docker chooses a free one per network).
The process backend needs nothing: each node takes free ports.
"""
from __future__ import annotations

import ipaddress
from dataclasses import replace

from harness.errors import BadInput
from harness.run.spec import TestSpec


def first_subnet(spec: TestSpec, given: str | None) -> str | None:
    """The subnet of slot 0: `given` (--subnet), else the spec's, else the netns default."""
    if spec.backend not in ("netns", "docker"):
        return None
    if given:
        return given
    subnet = spec.backend_options.get("subnet")
    if subnet:
        return str(subnet)
    from clusters import default_subnet
    return default_subnet(spec.backend) if spec.backend == "netns" else None


def slot_subnet(first: str, slot: int) -> str:
    """The subnet of `slot`: `first` moved on by `slot` blocks of its own size."""
    try:
        network = ipaddress.IPv4Network(first)
    except ValueError as e:
        raise BadInput(f"--subnet {first!r}: give an IPv4 network such as 10.77.0.0/24 ({e})") from None
    start = int(network.network_address) + slot * network.num_addresses
    if start + network.num_addresses > 2**32:
        raise BadInput(f"--subnet {first}: {slot + 1} subnets of its size do not fit above it; choose a lower one")
    return str(ipaddress.IPv4Network((start, network.prefixlen)))


def for_slot(spec: TestSpec, slot: int, first: str | None) -> TestSpec:
    """`spec` on slot `slot`'s subnet (unchanged for a backend without one)."""
    if first is None or spec.backend not in ("netns", "docker"):
        return spec
    return replace(spec, backend_options={**spec.backend_options, "subnet": slot_subnet(first, slot)})
