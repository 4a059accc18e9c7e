"""Names and settings are refused up front (docs/RUN.md, docs/CAMPAIGNS.md, docs/hosts/netns.md):
run (test) names and campaign names are bounded in characters and UTF-8 bytes and may not be
one of the names that live at the top of a results folder (harness/rundir/names.py
RESERVED_NAMES); a netns subnet lies inside a private block (RFC 1918, or RFC 2544's testing
block), never loopback or public space; and every `--parallel` slot of a campaign stays inside
the block its first subnet is in. Each refusal exits 254 naming the field and the value and
saying what to do, in spec validation: before any host exists.

Through the real CLI (harness.cli.main with argv, as tests/reliability/test_cli_fuzz.py does,
and once as a process of its own): `fencepost run` gets a results folder under a regular file,
a tripwire, so a value that slipped through validation ends in "cannot make a run directory"
(and the test fails) before any cluster, namespace or process exists; campaigns are checked
with `--plan`, which runs nothing, and once without it under the same tripwire.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fencepost.harness.run.spec import MAX_NAME
from fencepost.harness.rundir.names import RESERVED_NAMES
from tests.support.cli import Outcome, in_process
from tests.support.paths import ROOT

SLIPPED = "cannot make a run directory"
RESERVED = ("clusters", "campaigns", "index.html", "latest")
PUBLIC = ("8.8.8.0/24", "1.2.3.0/24", "100.64.0.0/24", "172.32.0.0/24", "192.169.0.0/24", "10.0.0.0/7")
LOOPBACK = ("127.0.0.0/24", "127.77.0.0/24")


cli = in_process


@pytest.fixture
def tripwire(tmp_path) -> list[str]:
    """`--results` below a regular file: nothing can be made there."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    return ["--results", str(blocker / "results")]


def refused(outcome: Outcome, *words: str) -> str:
    assert outcome.code == 254, f"exit {outcome.code}: {outcome.err[-1500:]}"
    assert "Traceback" not in outcome.err and SLIPPED not in outcome.err, outcome.err
    for word in words:
        assert word in outcome.err, f"{word!r} not in {outcome.err!r}"
    return outcome.err


def campaign_file(tmp_path: Path, text: str, stem: str = "c") -> Path:
    path = tmp_path / f"{stem}.toml"
    path.write_text(text)
    return path


NETNS_CAMPAIGN = '[base]\nbackend = "netns"\ntime_limit = 5\n'


# -- run names ---------------------------------------------------------------------------------

def test_the_tripwire_catches_a_valid_spec(tripwire):
    """The control: a valid name and subnet pass validation and stop at the run directory."""
    outcome = cli(["run", *tripwire, "--name", "fine-name", "--backend", "netns",
                   "--backend-option", "subnet=10.77.0.0/24"])
    assert outcome.code == 254 and SLIPPED in outcome.err, outcome.err


@pytest.mark.parametrize("name", [
    "x" * (MAX_NAME + 1),
    "y" * 300,
    "\u20ac" * 70,  # 70 characters, 210 bytes in UTF-8: a folder name holds 255, the run's stamp more
    *RESERVED, "CLUSTERS", "Latest",
])
def test_a_run_name_too_long_or_reserved_is_refused_before_anything_starts(tripwire, name):
    err = refused(cli(["run", *tripwire, "--name", name]), "name = ")
    assert "reserved" in err if name.lower() in RESERVED else "at most 100 characters" in err, err


def test_the_reserved_names_are_the_top_of_a_results_folder():
    assert set(RESERVED) <= {n.lower() for n in RESERVED_NAMES}


def test_a_reserved_name_in_a_config_file_is_refused(tmp_path, tripwire):
    config = tmp_path / "spec.toml"
    config.write_text('name = "campaigns"\n')
    refused(cli(["run", *tripwire, "--config", str(config)]), "name = 'campaigns'", "reserved")


# -- campaign names ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["c" * 300, "c" * (MAX_NAME + 1), *RESERVED, "Campaigns"])
def test_a_campaign_name_too_long_or_reserved_is_refused_by_plan(tmp_path, name):
    path = campaign_file(tmp_path, f'name = "{name}"\n[base]\nbackend = "process"\ntime_limit = 5\n')
    err = refused(cli(["campaign", str(path), "--plan", "--results", str(tmp_path / "results")]), str(path), "name = ")
    assert "reserved" in err if name.lower() in RESERVED else "at most 100 characters" in err, err
    assert not (tmp_path / "results").exists()


def test_a_campaign_named_by_its_file_is_held_to_the_same_rule(tmp_path):
    path = campaign_file(tmp_path, '[base]\nbackend = "process"\ntime_limit = 5\n', stem="latest")
    refused(cli(["campaign", str(path), "--plan"]), "the file's own name", "'latest'", "reserved")


def test_a_long_campaign_name_is_refused_before_its_folder_is_made(tmp_path, tripwire):
    """Without --plan: refused before the campaign folder (and so before any run)."""
    path = campaign_file(tmp_path, f'name = "{"c" * 300}"\n[base]\nbackend = "process"\ntime_limit = 5\n')
    refused(cli(["campaign", str(path), *tripwire]), "name = ")


# -- subnets: fencepost run --------------------------------------------------------------------

@pytest.mark.parametrize("subnet", PUBLIC)
def test_a_public_subnet_is_refused(tripwire, subnet):
    refused(cli(["run", *tripwire, "--backend", "netns", "--backend-option", f"subnet={subnet}"]),
            "backend_options", subnet, "not private address space", "10.0.0.0/8", "e.g. 10.77.0.0/24")


@pytest.mark.parametrize("subnet", LOOPBACK)
def test_a_loopback_subnet_is_refused(tripwire, subnet):
    refused(cli(["run", *tripwire, "--backend", "netns", "--backend-option", f"subnet={subnet}"]),
            "backend_options", subnet, "loopback", "10.0.0.0/8")


def test_a_subnet_too_small_for_the_nodes_is_refused(tripwire):
    refused(cli(["run", *tripwire, "--backend", "netns", "--nodes", "5", "--backend-option", "subnet=10.77.0.0/29"]),
            "backend_options", "10.77.0.0/29", "choose a larger subnet")


@pytest.mark.parametrize("subnet", ["10.0.0.0/8", "172.16.0.0/12", "192.168.7.0/24", "198.18.0.0/24"])
def test_every_private_block_is_accepted_even_a_whole_one(tripwire, subnet):
    """The other side: a subnet in each block passes (a /8 without listing its 16 million hosts)."""
    outcome = cli(["run", *tripwire, "--backend", "netns", "--backend-option", f"subnet={subnet}"])
    assert outcome.code == 254 and SLIPPED in outcome.err, outcome.err


# -- subnets: campaigns and their --parallel slots ---------------------------------------------

@pytest.mark.parametrize("subnet", ["8.8.8.0/24", "127.0.0.0/24"])
def test_a_campaign_subnet_outside_private_space_is_refused_by_plan(tmp_path, subnet):
    path = campaign_file(tmp_path, NETNS_CAMPAIGN)
    refused(cli(["campaign", str(path), "--plan", "--subnet", subnet]), f"--subnet {subnet}", "10.0.0.0/8")


@pytest.mark.parametrize("subnet, parallel, spilled", [
    ("10.255.255.0/24", 2, "11.0.0.0/24"),
    ("172.31.255.0/24", 2, "172.32.0.0/24"),
    ("192.168.255.0/25", 3, "192.169.0.0/25"),
    ("10.255.250.0/24", 8, "11.0.0.0/24"),
])
def test_parallel_slots_that_spill_out_of_the_block_are_refused(tmp_path, subnet, parallel, spilled):
    path = campaign_file(tmp_path, NETNS_CAMPAIGN)
    refused(cli(["campaign", str(path), "--plan", "--subnet", subnet, "--parallel", str(parallel)]),
            f"--subnet {subnet} with --parallel {parallel}", spilled, "smaller --parallel")


def test_slots_from_the_spec_s_own_subnet_are_checked_too(tmp_path):
    path = campaign_file(tmp_path, '[base]\nbackend = "netns"\ntime_limit = 5\n'
                                   '[base.backend_options]\nsubnet = "10.255.255.0/24"\n')
    refused(cli(["campaign", str(path), "--plan", "--parallel", "2"]), "subnet 10.255.255.0/24", "11.0.0.0/24")


def test_slots_too_small_for_a_run_of_the_matrix_are_refused(tmp_path):
    """Every run's cluster must fit every slot: the matrix's biggest, not only the first run's."""
    path = campaign_file(tmp_path, NETNS_CAMPAIGN + '[matrix]\nnodes = [3, 9]\n')
    refused(cli(["campaign", str(path), "--plan", "--subnet", "10.77.0.0/29", "--parallel", "2"]),
            "--subnet 10.77.0.0/29", "choose a larger subnet")


def test_slots_inside_the_block_are_planned(tmp_path):
    path = campaign_file(tmp_path, NETNS_CAMPAIGN)
    outcome = cli(["campaign", str(path), "--plan", "--subnet", "10.255.254.0/24", "--parallel", "2",
                   "--results", str(tmp_path / "results")])
    assert outcome.code == 0 and "2 at a time" in outcome.err, outcome.err


def test_a_campaign_refused_for_its_slots_makes_nothing(tmp_path, tripwire):
    path = campaign_file(tmp_path, NETNS_CAMPAIGN)
    refused(cli(["campaign", str(path), *tripwire, "--subnet", "10.255.255.0/24", "--parallel", "2"]), "11.0.0.0/24")


# -- the real entry point ----------------------------------------------------------------------

def test_the_fencepost_program_refuses_the_same_way(tmp_path, tripwire):
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "run", *tripwire, "--name", "clusters",
                           "--backend", "netns", "--backend-option", "subnet=8.8.8.0/24"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "PYTHONPATH": str(ROOT)})
    refused(Outcome(done.returncode, done.stderr), "name = 'clusters'", "reserved")


@pytest.mark.parametrize("subnet", ["10.77.0.0/24", "192.168.4.0/29", "172.16.0.0/12", "10.0.0.0/8"])
def test_a_subnet_s_addresses_are_its_first_hosts_without_listing_them(subnet):
    """The bridge and nodes take the subnet's first host addresses, computed, not listed (a /8
    holds 16 million: listing them took minutes and gigabytes)."""
    import ipaddress
    import itertools

    from fencepost.clusters.hosts.netns import network
    planned = network.plan("c", ["n1", "n2", "n3"], subnet)
    first = [str(a) for a in itertools.islice(ipaddress.IPv4Network(subnet).hosts(), 4)]
    assert [planned.bridge_address, *(link.address for link in planned.nodes)] == first
