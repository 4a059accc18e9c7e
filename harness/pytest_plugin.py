"""fencepost inside your own pytest suite (registered as the `fencepost` pytest plugin when
the package is installed).

Fixtures:
- `fencepost_cluster` — a running cluster (clusters/cluster.py `Cluster`) with the topic
  made, taken down after the test. Configure it with
  `@pytest.mark.fencepost_cluster(system="kafka:3.9.1", nodes=3, backend="process",
  topic="fp", partitions=3, replication_factor=3, system_options={...})`; the marker's
  arguments are checked (a misspelt one fails the test, naming the arguments there are).
- `fencepost_clusters` — a session-wide factory: `fencepost_clusters(system=..., nodes=...,
  ...)` (the marker's arguments) returns a running cluster, the same one for the same
  arguments all session long (healed of any fault before it is handed out again), so a
  suite pays one cluster start (one JVM start for stock Kafka) per configuration, not per
  test; every cluster is taken down at the end of the session.
- `fencepost_run` — a function running a whole chaos test (`fencepost run`) with any run
  settings as keywords (`fencepost_run(nemesis={"faults": "kill"}, time_limit=20)`,
  dotted names as `"nemesis.faults"` in a dict: `fencepost_run(**{"nemesis.faults": "kill"})`);
  it returns a `ChaosResult` (`valid`, `verdict`, `exit_code`, `anomaly_counts`, `run_dir`,
  `report`, `summary`) — `assert result.valid, result.summary`. The run directory and its
  report are recorded as the test's properties (`record_property`: `fencepost_run_dir`,
  `fencepost_report`, `fencepost_verdict`), so `--junitxml` lists them with the test.

Command-line options: `--fencepost-backend` (default: netns as root, else process);
`--fencepost-results DIR`: run directories (DIR/<test>/...) and clusters' node logs
(DIR/clusters/...) go there and outlive pytest's tmp folders, with DIR/index.html listing the
runs; without it they stay in the test's tmp folder (pytest keeps the last three sessions').
"""
from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

MARKER = "fencepost_cluster"
# argument -> (the types it takes, what to give)
MARKER_ARGS: dict[str, tuple[tuple[type, ...], str]] = {
    "system": ((str,), "own or kafka:VERSION"),
    "nodes": ((int,), "a number of brokers"),
    "backend": ((str, type(None)), "netns, process or docker"),
    "backend_options": ((dict, type(None)), "a dict of backend settings"),
    "system_options": ((dict, type(None)), "a dict of system settings"),
    "topic": ((str,), "a topic name, or '' for none"),
    "partitions": ((int,), "a number of partitions"),
    "replication_factor": ((int,), "a replication factor"),
}
UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fencepost", "fencepost chaos tests")
    group.addoption("--fencepost-backend", default=None,
                    help="host backend for fencepost fixtures: netns, process, docker (default: netns as root)")
    group.addoption("--fencepost-results", default=None, metavar="DIR",
                    help="keep run directories and cluster logs in DIR (DIR/<test>/, DIR/clusters/, "
                         "DIR/index.html) instead of the tests' tmp folders")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(system='own', nodes=3, backend=None, topic='fp', partitions=3, "
                                       "replication_factor=3, system_options=None, backend_options=None): the "
                                       "fencepost_cluster to start")


@dataclass(frozen=True)
class ChaosResult:
    verdict: str  # valid, invalid, unknown
    exit_code: int
    run_dir: Path
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    report: Path | None = None

    @property
    def valid(self) -> bool:
        return self.verdict == "valid"

    @property
    def summary(self) -> str:
        found = ", ".join(f"{k} {v}" for k, v in sorted(self.anomaly_counts.items()) if v) or "no anomalies"
        notes = "".join(f"; {p}" for p in self.problems)
        where = f"; report {self.report}" if self.report else ""
        return f"verdict {self.verdict} ({found}){notes}; run directory {self.run_dir}{where}"


def cluster_settings(args: tuple, kwargs: dict[str, Any], where: str) -> dict[str, Any]:
    """The marker's (or the factory's) arguments, checked: every name known, every value of
    its type; raises ValueError saying what is wrong and what there is."""
    if args:
        raise ValueError(f"{where} takes keyword arguments only ({', '.join(MARKER_ARGS)}); got {args!r}")
    for name, value in kwargs.items():
        if name not in MARKER_ARGS:
            close = [k for k in MARKER_ARGS if _similar(k, name)]
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"{where}: unknown argument {name!r}{hint}; its arguments are {', '.join(MARKER_ARGS)}")
        types, what = MARKER_ARGS[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"{where}: {name}={value!r}: give {what}")
    return dict(kwargs)


def _similar(a: str, b: str) -> bool:
    import difflib
    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.75


def _results_option(config: pytest.Config) -> Path | None:
    value = config.getoption("--fencepost-results")
    return Path(value).resolve() if value else None


def _test_folder(request: pytest.FixtureRequest) -> str:
    return UNSAFE.sub("-", request.node.nodeid).strip("-")[:150] or "test"


def _start(settings: dict[str, Any], name: str, directory: Path, default_backend: str | None) -> Any:
    from fencepost.clusters import Cluster, ClusterSpec, TopicSpec
    from fencepost.clusters import default_backend as chosen_backend

    backend = settings.get("backend") or default_backend or chosen_backend()
    spec = ClusterSpec(name, settings.get("system", "own"), int(settings.get("nodes", 3)), backend,
                       dict(settings.get("backend_options") or {}), dict(settings.get("system_options") or {}))
    cluster = Cluster.up(spec, directory)
    try:
        topic = settings.get("topic", "fp")
        if topic:
            cluster.create_topic(TopicSpec(topic, int(settings.get("partitions", 3)),
                                           int(settings.get("replication_factor", min(3, spec.brokers)))))
    except BaseException:
        cluster.down()
        raise
    return cluster


@pytest.fixture
def fencepost_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    marker = request.node.get_closest_marker(MARKER)
    try:
        settings = cluster_settings(marker.args, marker.kwargs, f"@pytest.mark.{MARKER}") if marker else {}
    except ValueError as e:
        pytest.fail(str(e), pytrace=False)
    results = _results_option(request.config)
    directory = (results / "clusters" / _test_folder(request)) if results else tmp_path / "cluster"
    cluster = _start(settings, f"pt-{zlib.crc32(request.node.nodeid.encode()) % 10**6:06d}", directory,
                     request.config.getoption("--fencepost-backend"))
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def fencepost_clusters(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    clusters: dict[str, Any] = {}
    results = _results_option(request.config)
    home = (results / "clusters") if results else tmp_path_factory.mktemp("fencepost-clusters")
    backend = request.config.getoption("--fencepost-backend")

    def cluster(**kwargs: Any) -> Any:
        settings = cluster_settings((), kwargs, "fencepost_clusters(...)")
        key = repr(sorted(settings.items()))
        if key in clusters:
            clusters[key].heal()  # whatever a test before left cut, paused or stopped
            return clusters[key]
        name = f"ps-{zlib.crc32(f'{key}/{os.getpid()}'.encode()) % 10**6:06d}"
        clusters[key] = _start(settings, name, home / name, backend)
        return clusters[key]
    try:
        yield cluster
    finally:
        errors = []
        for started in clusters.values():
            try:
                started.down()
            except Exception as e:  # take down the others all the same
                errors.append(f"{started.name}: {e}")
        if errors:
            raise RuntimeError(f"fencepost_clusters: could not take down {'; '.join(errors)}")


@pytest.fixture
def fencepost_run(request: pytest.FixtureRequest, tmp_path: Path, record_property: Callable[[str, object], None]):
    from fencepost.harness.run.progress import Progress
    from fencepost.harness.run.runner import run_test
    from fencepost.harness.run.spec import build_spec
    from fencepost.harness.rundir.record import verdict_word

    results = _results_option(request.config)
    folder = (results / _test_folder(request)) if results else tmp_path / "results"

    def run(config: dict[str, Any] | None = None, **settings: Any) -> ChaosResult:
        overrides = {"results": str(folder), **settings}
        if "backend" not in overrides and request.config.getoption("--fencepost-backend"):
            overrides["backend"] = request.config.getoption("--fencepost-backend")
        spec = build_spec(config or {}, overrides)
        outcome = run_test(spec, Progress(live=False))
        check = outcome.check
        result = ChaosResult(verdict_word(check.valid if check else None), outcome.exit_code, outcome.run_dir,
                             dict(check.results.get("anomaly_counts", {})) if check else {},
                             tuple(outcome.problems), outcome.report)
        record_property("fencepost_run_dir", str(outcome.run_dir))
        record_property("fencepost_verdict", result.verdict)
        if outcome.report is not None:
            record_property("fencepost_report", str(outcome.report))
        if results is not None:
            from fencepost.harness.index.page import refresh_index
            refresh_index(results)
        return result
    return run
