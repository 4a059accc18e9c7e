"""fencepost inside your own pytest suite (registered as the `fencepost` pytest plugin when
the package is installed).

Fixtures:
- `fencepost_cluster` — a running cluster (clusters/cluster.py `Cluster`) with the topic
  made, taken down after the test. Configure it with
  `@pytest.mark.fencepost_cluster(system="kafka:3.9.1", nodes=3, backend="process",
  topic="fp", partitions=3, replication_factor=3, system_options={...})`.
- `fencepost_run` — a function running a whole chaos test (`fencepost run`) with any run
  settings as keywords (`fencepost_run(nemesis={"faults": "kill"}, time_limit=20)`,
  dotted names as `"nemesis.faults"` in a dict: `fencepost_run(**{"nemesis.faults": "kill"})`)
  into the test's tmp folder; it returns a `ChaosResult` (`valid`, `verdict`, `exit_code`,
  `anomaly_counts`, `run_dir`, `summary`) — `assert result.valid, result.summary`.

Command-line option: `--fencepost-backend` (default: netns as root, else process). Run
directories and node logs stay in the test's tmp folder (pytest keeps the last three
sessions' folders; `--basetemp DIR` to choose where).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

MARKER = "fencepost_cluster"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fencepost", "fencepost chaos tests")
    group.addoption("--fencepost-backend", default=None,
                    help="host backend for fencepost fixtures: netns, process, docker (default: netns as root)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(system='own', nodes=3, backend=None, topic='fp', partitions=3, "
                                       "replication_factor=3, system_options=None): the fencepost_cluster to start")


@dataclass(frozen=True)
class ChaosResult:
    verdict: str  # valid, invalid, unknown
    exit_code: int
    run_dir: Path
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return self.verdict == "valid"

    @property
    def summary(self) -> str:
        found = ", ".join(f"{k} {v}" for k, v in sorted(self.anomaly_counts.items()) if v) or "no anomalies"
        notes = "".join(f"; {p}" for p in self.problems)
        return f"verdict {self.verdict} ({found}){notes}; run directory {self.run_dir}"


@pytest.fixture
def fencepost_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    from clusters.cluster import Cluster, ClusterSpec
    from clusters.hosts import default_backend
    from clusters.systems.base import TopicSpec

    marker = request.node.get_closest_marker(MARKER)
    settings = dict(marker.kwargs) if marker else {}
    backend = settings.get("backend") or request.config.getoption("--fencepost-backend") or default_backend()
    spec = ClusterSpec(f"pt-{zlib.crc32(request.node.nodeid.encode()) % 10**6:06d}", settings.get("system", "own"),
                       int(settings.get("nodes", 3)), backend, dict(settings.get("backend_options") or {}),
                       dict(settings.get("system_options") or {}))
    cluster = Cluster.up(spec, tmp_path / "cluster")
    try:
        topic = settings.get("topic", "fp")
        if topic:
            cluster.create_topic(TopicSpec(topic, int(settings.get("partitions", 3)),
                                           int(settings.get("replication_factor", min(3, spec.brokers)))))
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
def fencepost_run(request: pytest.FixtureRequest, tmp_path: Path):
    from harness.run.progress import Progress
    from harness.run.runner import run_test
    from harness.run.spec import build_spec
    from harness.verdict import verdict_word

    def run(config: dict[str, Any] | None = None, **settings: Any) -> ChaosResult:
        overrides = {"results": str(tmp_path / "results"), **settings}
        if "backend" not in overrides and request.config.getoption("--fencepost-backend"):
            overrides["backend"] = request.config.getoption("--fencepost-backend")
        spec = build_spec(config or {}, overrides)
        outcome = run_test(spec, Progress(live=False))
        check = outcome.check
        return ChaosResult(verdict_word(check.valid if check else None), outcome.exit_code, outcome.run_dir,
                           dict(check.results.get("anomaly_counts", {})) if check else {}, tuple(outcome.problems))
    return run
