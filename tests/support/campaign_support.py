"""A campaign without clusters: `make_campaign` runs the small campaign `CAMPAIGN` (truncation
hw and kip101, two seeds each, hw expected to lose writes) with the seeds' example runs
(examples/) standing in for real runs, each checked, and returns its campaign directory.
Shared by the tests of the campaign report and of the results index."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

from fencepost.harness.campaign.conductor import campaign_dir, run_campaign
from fencepost.harness.campaign.plan import Shard, load_campaign
from tests.support.paths import EXAMPLES

# the seeds' runs, standing in for runs of each truncation (their test.json says which)
SOURCE = {"hw": ["kip101-scenario-1", "kafka-1211-example-2-high-watermark"],
          "kip101": ["kafka-1211-example-1", "kafka-1211-example-2-leader-epoch"]}
CAMPAIGN = """
name = "stand-in"
[base]
backend = "process"
[matrix]
truncation = ["hw", "kip101"]
seed = [1, 2]
[[expect]]
truncation = "hw"
verdict = "invalid"
"""


def run_one(planned, where):
    run_dir = where / "run" / f"2026112{planned.number}T100000Z-abcde{planned.number}"
    shutil.copytree(EXAMPLES / SOURCE[planned.spec.truncation][planned.spec.seed - 1], run_dir)
    from fencepost.harness.check.checking import check_run
    from fencepost.harness.rundir.record import verdict_word
    check = check_run(run_dir, out=None, jobs=1)
    (run_dir / "report.html").write_text("<html>the run's report</html>")
    return {"verdict": verdict_word(check.valid), "exit_code": check.exit_code,
            "anomaly_counts": dict(check.results["anomaly_counts"]), "run_dir": str(run_dir)}


def make_campaign(tmp_path: Path, shard: Shard | None = None, results: str = "results") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    campaign = load_campaign(path).sharded(shard)
    directory = campaign_dir(tmp_path / results, campaign, resume=False)
    run_campaign(campaign, directory, run_one, out=io.StringIO())
    return directory
