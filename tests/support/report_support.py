"""A run directory to write reports of: `planted_run` makes one as `fencepost run` leaves it,
from a generated history with a planted lost write, checked; `PLOTS` names the plots its
report draws. Shared by the tests of the report and of what a browser shows of it."""
from __future__ import annotations

import io
from pathlib import Path

import orjson

from fencepost.harness.check.checking import check_run
from fencepost.harness.run.spec import TestSpec as RunSpec  # (a Test* name would be collected)
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import plant

PLOTS = ("latency-raw", "latency-quantiles", "rate", "unseen", "realtime-lag", "timeline")


def planted_run(results: Path, test_name: str = "synth-lost-write", lines: int = 3_000,
                stamp: str = "20261121T101500-abc123") -> Path:
    """A run directory as `fencepost run` leaves it — results/<test>/<stamp>/ with
    test.json of the run spec, history.jsonl, final.jsonl, nodes/<node>/broker.log —
    from a generated history with a planted lost write, checked (results.json)."""
    run = plant("lost-write/missing", generate(GenConfig(seed=3, lines=lines)), 1).run
    run_dir = results / test_name / stamp
    run.write(run_dir)
    spec = {**RunSpec(name=test_name, truncation="kip320").to_json(),  # as a run records it: defaults filled
            "versions": {"fencepost": "0.1.0", "python": "3.11.7", "confluent_kafka": "2.16.1",
                         "librdkafka": "2.16.0"},
            "protocol": "the own broker, truncation kip320 (KIP-320 leader-epoch fencing)"}
    (run_dir / "test.json").write_bytes(orjson.dumps(spec, option=orjson.OPT_INDENT_2))
    for node in ("n1", "n2", "n3"):
        (run_dir / "nodes" / node).mkdir(parents=True)
        (run_dir / "nodes" / node / "broker.log").write_text(f"broker {node} listening\n")
    assert check_run(run_dir, out=io.StringIO()).valid is False
    return run_dir
