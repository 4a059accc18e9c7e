"""A campaign's runs as JUnit XML: one testcase per run, a failure for an invalid run (its
anomaly counts), an error for a crashed one, skipped for unknown; written atomically
after every run, so a CI sees a partial campaign too."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence
from xml.etree import ElementTree as ET

JUNIT_FILE = "junit.xml"


def write_junit(path: Path, campaign: str, outcomes: Sequence[Mapping]) -> None:
    suite = ET.Element("testsuite", name=campaign, tests=str(len(outcomes)),
                       failures=str(sum(o["verdict"] == "invalid" for o in outcomes)),
                       errors=str(sum(o["verdict"] == "crashed" for o in outcomes)),
                       skipped=str(sum(o["verdict"] == "unknown" for o in outcomes)),
                       time=f"{sum(o['seconds'] for o in outcomes):.1f}")
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", classname=campaign, name=o["run_id"], time=f"{o['seconds']:.1f}")
        found = ", ".join(f"{name} {n}" for name, n in sorted(o.get("anomaly_counts", {}).items()) if n)
        detail = f"run directory: {o.get('run_dir')}"
        if o["verdict"] == "invalid":
            ET.SubElement(case, "failure", message=f"invalid: {found}", type="invalid").text = detail
        elif o["verdict"] == "crashed":
            ET.SubElement(case, "error", message=o.get("error") or "crashed", type="crashed").text = detail
        elif o["verdict"] == "unknown":
            ET.SubElement(case, "skipped", message=f"unknown: {o.get('error') or found or 'no verdict'}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    ET.ElementTree(suite).write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)
