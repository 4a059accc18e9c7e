"""Where a run of a campaign runs when several run at once (`--parallel N`): slot k of N
gets its own network, the k-th block after the campaign's first subnet, of the same size
(10.77.0.0/24, 10.77.1.0/24, ...), so that runs side by side never share addresses; their
clusters' names are their own already (run-<6 hex of the run directory>).

Only backends with a subnet take one: netns always (its default subnet when the spec names
none), docker when the spec names a subnet (else Docker chooses a free one per network).
The process backend needs nothing: each node takes free ports.

`check_slots` refuses, before anything starts (also with `--plan`), a first subnet or a
`--parallel` whose slots the backend would refuse: every slot's subnet is checked as the
backend checks a spec's (netns: inside one private block, big enough for every run's nodes),
so slots never spill out of the block the first one is in (10.255.255.0/24 with two slots
would take 11.0.0.0/24, public space: refused).
"""
from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import Iterable

from fencepost.clusters import ClusterConfigError, check_backend_options
from fencepost.harness.errors import BadInput
from fencepost.harness.run.spec import TestSpec

SUBNET_BACKENDS = ("netns", "docker")


def first_subnet(spec: TestSpec, given: str | None) -> str | None:
    """The subnet of slot 0: `given` (--subnet), else the spec's, else the netns default."""
    if spec.backend not in SUBNET_BACKENDS:
        return None
    if given:
        return given
    subnet = spec.backend_options.get("subnet")
    if subnet:
        return str(subnet)
    from fencepost.clusters import default_subnet
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
    if first is None or spec.backend not in SUBNET_BACKENDS:
        return spec
    return replace(spec, backend_options={**spec.backend_options, "subnet": slot_subnet(first, slot)})


def check_slots(specs: Iterable[TestSpec], given: str | None, parallel: int) -> None:
    """Refuse (BadInput, exit 254) a first subnet (`given`: --subnet, else the first spec's) or a
    `parallel` for which some slot's subnet is one the backend of some run would refuse."""
    specs = list(specs)
    first = first_subnet(specs[0], given) if specs else None
    if first is None:
        return
    where = f"--subnet {first}" if given else f"subnet {first} (the first run's)"
    slot_subnet(first, parallel - 1)  # the slots fit below 255.255.255.255 at all
    clusters = {(spec.backend, spec.nodes, repr(sorted(spec.backend_options.items()))): spec
                for spec in specs if spec.backend in SUBNET_BACKENDS}
    for slot in range(parallel):
        subnet = slot_subnet(first, slot)
        for spec in clusters.values():
            try:
                check_backend_options(spec.backend, {**spec.backend_options, "subnet": subnet}, spec.nodes)
            except ClusterConfigError as e:
                if slot == 0:
                    raise BadInput(f"{where}: {e}") from None
                raise BadInput(f"{where} with --parallel {parallel}: slot {slot + 1} would take {subnet}, which "
                               f"the {spec.backend} backend refuses ({e}); give a first subnet (--subnet) with room "
                               f"for {parallel} blocks of its size inside one private block, or a smaller "
                               "--parallel") from None
