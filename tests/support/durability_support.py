"""One `fencepost run` of a durability fault with the nodes on lazy disks (flush = "lazy", netns),
scripted, for the durability tests of stock Kafka and of the own broker."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests.support.cli import fencepost


@dataclass(frozen=True)
class LazyRun:
    run_dir: Path
    stdout: str


def lazy_run(tmp_path: Path, name: str, system: str, subnet: str, fault: str, script: list[dict], *,
             time_limit: float = 40, partitions: int = 3, system_options: dict | None = None) -> LazyRun:
    """The run (exit 0 or 1 asserted, test.json saying lazy disks of the journal model)."""
    config = tmp_path / f"{name}.toml"
    options = ", ".join(f"{k} = {json.dumps(v) if not isinstance(v, dict) else _inline(v)}"
                        for k, v in (system_options or {}).items())
    steps = ", ".join(f'{{ at = {s["at"]}, action = "{s["action"]}" }}' for s in script)
    config.write_text(f'''name = "{name}"
system = "{system}"
backend = "netns"
backend_options = {{ subnet = "{subnet}" }}
system_options = {{ {options} }}
flush = "lazy"
time_limit = {time_limit}
rate = 200
results = "{tmp_path / 'results'}"
[topic]
partitions = {partitions}
[nemesis]
faults = "{fault}"
schedule = "scripted"
script = [{steps}]
''')
    done = fencepost(tmp_path, "run", "--config", str(config), timeout=900)
    assert done.returncode in (0, 1), (done.stdout[-3000:], done.stderr[-3000:])
    (run_dir,) = (tmp_path / "results" / name).glob("2*")
    test = orjson.loads((run_dir / "test.json").read_bytes())
    assert test["flush"] == "lazy" and test["versions"]["flush"] == "lazy"
    assert test["versions"]["lazy_model"] == "journal"
    return LazyRun(run_dir, done.stdout)


def _inline(table: dict) -> str:
    return "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in table.items()) + " }"


def scenario_info(run_dir: Path, name: str) -> dict:
    """The info line of the scenario (or fault): it ran to its end, without an error."""
    infos = [op for line in (run_dir / "history.jsonl").read_bytes().splitlines()
             if (op := orjson.loads(line))["process"] == "nemesis" and op["f"] == name and op["type"] == "info"]
    assert infos, f"no {name} in the history"
    assert "error" not in infos[0], infos[0]
    return infos[0]["value"]
