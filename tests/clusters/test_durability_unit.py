"""The durability pieces that need no running cluster: which folders go on lazy disks per system,
where their backing folders are, what test.json records of the flush and ELR settings, the
refusal of a power cut (and of the durability scenarios) on a cluster not started on lazy disks
(exit 254 with the fix), the refusal of backends that cannot run the daemon, the run spec's
default flush, and `fencepost compare` telling system options apart."""
from __future__ import annotations

from pathlib import Path

import pytest

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.disks import LazyDisks
from fencepost.clusters.disks.node_disk import CutLoss, backing_folder
from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts import process
from fencepost.clusters.lazyfs import CutReport
from fencepost.clusters.systems import system_for
from fencepost.clusters.systems.kafka.options import KafkaOptions
from fencepost.clusters.systems.kafka.system import KafkaSystem
from fencepost.harness.compare.collect import RunResult, configuration
from fencepost.harness.compare.order import system_key
from fencepost.harness.compare.table import rows
from fencepost.harness.run.spec import build_spec
from fencepost.nemesis import check_fault, parse_fault
from tests.support.cli import fencepost


def hosts_only(tmp_path: Path, system: str = "own", brokers: int = 3, **options) -> Cluster:
    """A cluster object on process hosts with nothing started (check_fault asks only its shape)."""
    spec = ClusterSpec("fp-durability-unit", system, brokers, "process", system_options=options)
    chosen = system_for("own", options) if system == "own" else kafka(**options)
    return Cluster(spec, tmp_path, process.provision(spec.name, chosen.node_names(brokers), tmp_path), chosen)


def kafka(version: str = "3.9.1", **options) -> KafkaSystem:
    # libs given: no Maven; the folder must exist (it is checked), any folder does for the shape
    return KafkaSystem(KafkaOptions.from_mapping({"libs": "/", **options}).checked(version))


def test_lazy_folders_are_the_data_dirs_of_brokers_and_kraft_controllers_not_zookeeper(tmp_path):
    own = hosts_only(tmp_path / "own", flush="lazy")
    assert {h.name: own.system.lazy_folders(h) for h in own.hosts} == {
        "controller": [], **{f"n{i}": [f"{own.hosts[f'n{i}'].workdir}/data"] for i in (1, 2, 3)}}
    zk = hosts_only(tmp_path / "zk", "kafka", flush="lazy")
    assert zk.system.lazy_folders(zk.hosts["zk"]) == [] and zk.system.lazy_folders(zk.hosts["n2"])
    kraft = hosts_only(tmp_path / "kraft", "kafka", flush="lazy", mode="kraft", controllers=1)
    assert kraft.system.lazy_folders(kraft.hosts["c1"]) == [f"{kraft.hosts['c1'].workdir}/data"]
    assert hosts_only(tmp_path / "os", "kafka").system.lazy_folders(zk.hosts["n1"]) == []
    assert own.system.lazy_options().model == "journal"
    assert system_for("own", {"flush": "lazy", "lazy_model": "strict"}).lazy_options().model == "strict"
    assert system_for("own").lazy_options() is None


def test_backing_folders_mirror_the_mount_points_under_the_workdir(tmp_path):
    host = hosts_only(tmp_path).hosts["n1"]
    assert backing_folder(host, f"{host.workdir}/data") == f"{host.workdir}/durable/data"
    assert backing_folder(host, f"{host.workdir}/a/b") == f"{host.workdir}/durable/a/b"


def test_a_cut_loss_adds_up_the_mounts_of_a_node():
    loss = CutLoss.of([CutReport(4096, 1, 2, 0, False, 1, 2), {"lost_bytes": 8192, "lost_files": 3,
                                                              "restored_entries": 0, "removed_entries": 1}])
    assert loss.to_json() == {"lost_bytes": 12288, "lost_files": 4, "restored_entries": 2, "removed_entries": 1}


def test_the_own_broker_on_a_lazy_disk_runs_with_os_flush_and_an_fsync_timer(tmp_path):
    cluster = hosts_only(tmp_path, flush="lazy")
    argv = cluster.system.process_specs(cluster.hosts["n1"], cluster.hosts)[0].argv
    assert argv[argv.index("--flush") + 1] == "os" and argv[argv.index("--flush-interval-ms") + 1] == "1000"
    slow = system_for("own", {"flush": "lazy", "flush_interval_ms": 60000})
    argv = slow.process_specs(cluster.hosts["n1"], cluster.hosts)[0].argv
    assert argv[argv.index("--flush-interval-ms") + 1] == "60000"


def test_provenance_says_the_flush_the_lazy_model_and_eligible_leader_replicas():
    assert system_for("own", {"flush": "lazy"}).provenance() == {"flush": "lazy", "lazy_model": "journal"}
    assert system_for("own").provenance() == {"flush": "os", "lazy_model": None}
    seen = kafka("4.1.1", flush="lazy", lazy_model="strict").provenance()
    assert (seen["flush"], seen["lazy_model"], seen["eligible_leader_replicas"], seen["mode"]) == \
        ("lazy", "strict", True, "kraft")
    assert kafka("4.0.1").provenance()["eligible_leader_replicas"] is False
    assert kafka("4.4.0", elr=False).provenance()["eligible_leader_replicas"] is False
    assert kafka("3.9.1").provenance()["eligible_leader_replicas"] is None


@pytest.mark.parametrize("fault", ["power-cut", "power-cut:all", "kip101-divergence", "kip101-divergence:1"])
def test_a_power_cut_on_a_cluster_off_the_lazy_filesystem_is_refused_with_the_fix(tmp_path, fault):
    with pytest.raises(ClusterConfigError) as caught:
        check_fault(parse_fault(fault), hosts_only(tmp_path))
    message = str(caught.value)
    assert "not started on the lazy filesystem" in message and 'flush = "lazy"' in message
    assert "--flush lazy" in message


def test_a_power_cut_of_nodes_off_the_lazy_disks_is_refused_naming_them(tmp_path):
    cluster = hosts_only(tmp_path, "kafka", flush="lazy")
    cluster.disks = LazyDisks({n: object() for n in ("n1", "n2", "n3")})  # the shape check_fault reads
    check_fault(parse_fault("power-cut:majority"), cluster)
    with pytest.raises(ClusterConfigError, match=r"zk keep their data off the lazy filesystem"):
        check_fault(parse_fault("power-cut:controller"), cluster)


def test_the_cli_refuses_a_power_cut_of_a_cluster_off_the_lazy_filesystem_with_exit_254(tmp_path):
    cluster = hosts_only(tmp_path / "clusters" / "plain")
    cluster.save()
    done = fencepost(tmp_path, "nemesis", "start", "power-cut", "--cluster", "plain", "--results", str(tmp_path))
    assert done.returncode == 254, done.stderr
    assert "not started on the lazy filesystem" in done.stderr and "--flush lazy" in done.stderr


def test_a_backend_that_cannot_run_the_daemon_is_refused_saying_why():
    with pytest.raises(ClusterConfigError, match=r"the ssh backend cannot run it on its machines: use the netns, "
                                                 r"process or docker backend"):
        LazyDisks.check_backend("ssh")
    for backend in ("netns", "process", "docker"):
        LazyDisks.check_backend(backend)


def test_lazy_disks_on_docker_need_the_default_image(tmp_path):
    from fencepost.clusters.hosts import docker as docker_backend
    with pytest.raises(ClusterConfigError, match=r"image=mine: the lazy filesystem's daemon .* leave image= out"):
        docker_backend.provision("fp-x", ["n1"], tmp_path, {"image": "mine"}, fuse=True)


@pytest.mark.parametrize("faults", ["power-cut:all", "kip101-divergence", "kill,last-replica-standing:0"])
def test_a_run_with_a_power_cut_or_a_durability_scenario_gets_lazy_disks_by_default(faults):
    assert build_spec({"nemesis": {"faults": faults}}, {}).flush == "lazy"
    assert build_spec({"nemesis": {"faults": faults}, "flush": "os"}, {}).flush == "os"  # refused later, at setup
    assert build_spec({"nemesis": {"faults": "kill"}}, {}).flush == "os"


def test_compare_tells_system_options_apart_and_puts_them_after_the_plain_system():
    def test(system, **options):
        return {"system": system, "truncation": "release", "nemesis": {"faults": "last-replica-standing"},
                "system_options": options}
    assert configuration(test("kafka:4.1.1"))[0] == "kafka:4.1.1"
    assert configuration(test("kafka:4.1.1", elr=False))[0] == "kafka:4.1.1[elr=false]"
    assert configuration(test("kafka:3.9.1", mode="kraft", controllers=1))[0] == \
        "kafka:3.9.1[controllers=1,mode=kraft]"
    flush = configuration(test("kafka:3.9.1", broker_config={"log.flush.interval.messages": "1"}))[0]
    assert flush == 'kafka:3.9.1[broker_config={"log.flush.interval.messages":"1"}]'
    assert configuration(test("kafka", kafka_home="/opt/kafka"))[0] == "kafka"
    names = ["kafka:4.1.1[elr=false]", "kafka:3.9.1[mode=kraft]", "kafka:4.1.1", "kafka:3.9.1", "own", "kafka:0.10.2.2"]
    assert sorted(names, key=system_key) == ["own", "kafka:0.10.2.2", "kafka:3.9.1", "kafka:3.9.1[mode=kraft]",
                                              "kafka:4.1.1", "kafka:4.1.1[elr=false]"]
    table = rows([RunResult(Path("."), name, "release", "last-replica-standing", "valid")
                  for name in ("kafka:4.1.1", "kafka:4.1.1[elr=false]", "kafka:4.1.1")])
    assert [(r.system, r.runs) for r in table] == [("kafka:4.1.1", 2), ("kafka:4.1.1[elr=false]", 1)]
