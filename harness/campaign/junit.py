"""A campaign's runs as JUnit XML: one testcase per run, judged against what the run was
expected to yield (harness/campaign/expect.py), so a CI shows only surprises as failures:

| status | testcase |
|---|---|
| expected | passes; an expected invalid run says so in its system-out (the anomalies it found) |
| surprise | `failure` (what was expected and what came; the anomaly counts) |
| unknown | `skipped` (no verdict; with `--unknown-fails` it is a surprise: a failure) |
| crashed | `error` (the exception) |

Outcomes written before expectations existed are judged as expecting `valid`. Written
atomically after every run, so a CI sees a partial campaign too."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence
from xml.etree import ElementTree as ET

from fencepost.harness.campaign.expect import status_of
from fencepost.harness.rundir.atomic import write_atomically

JUNIT_FILE = "junit.xml"


def write_junit(path: Path, campaign: str, outcomes: Sequence[Mapping]) -> None:
    statuses = [status_of(dict(o)) for o in outcomes]
    suite = ET.Element("testsuite", name=campaign, tests=str(len(outcomes)),
                       failures=str(statuses.count("surprise")), errors=str(statuses.count("crashed")),
                       skipped=str(statuses.count("unknown")),
                       time=f"{sum(o.get('seconds', 0.0) for o in outcomes):.1f}")
    for o, status in zip(outcomes, statuses):
        case = ET.SubElement(suite, "testcase", classname=campaign, name=o["run_id"],
                             time=f"{o.get('seconds', 0.0):.1f}")
        found = ", ".join(f"{name} {n}" for name, n in sorted((o.get("anomaly_counts") or {}).items()) if n)
        detail = f"run directory: {o.get('run_dir')}"
        why = o.get("why") or o["verdict"]
        if status == "surprise":
            ET.SubElement(case, "failure", message=f"{why}" + (f": {found}" if found else ""),
                          type=o["verdict"]).text = detail
        elif status == "crashed":
            ET.SubElement(case, "error", message=o.get("error") or "crashed", type="crashed").text = detail
        elif status == "unknown":
            ET.SubElement(case, "skipped", message=f"unknown: {o.get('error') or found or 'no verdict'}")
        elif o["verdict"] == "invalid":
            ET.SubElement(case, "system-out").text = f"{why}: {found}; {detail}"
    write_atomically(path, ET.tostring(suite, encoding="utf-8", xml_declaration=True))
