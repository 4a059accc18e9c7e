"""A campaign's run in a process of its own (`fencepost campaign --parallel N`):

    python -m harness.campaign.child SPEC.json RESULT.json

SPEC.json is the run's spec as test.json holds it (its results folder and subnet set by the
campaign); the run goes as `fencepost run` would, its progress as lines on stderr (the
campaign sends them to the run's console.log), and RESULT.json gets the outcome fields of
harness/campaign/execute.py. SIGTERM and SIGINT end the run with its heal and teardown.
Exit: the run's exit code; 255 when it crashed (the traceback on stderr, no RESULT.json).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from fencepost.harness.errors import EXIT_BAD_INPUT, EXIT_CRASH, BadInput
from fencepost.harness.rundir.atomic import write_atomically

SPEC_ONLY = ("notes", "versions", "protocol")  # what test.json holds beyond the settings


def spec_from_json(data: dict):
    from fencepost.harness.run.spec import build_spec
    return build_spec({k: v for k, v in data.items() if k not in SPEC_ONLY}, {})


def main(argv: list[str]) -> int:
    from fencepost.harness.campaign.execute import run_planned
    from fencepost.harness.run.progress import Progress

    spec_file, result_file = Path(argv[0]), Path(argv[1])
    try:
        spec = spec_from_json(json.loads(spec_file.read_text()))
    except BadInput as e:
        print(f"fencepost campaign: {spec_file}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = run_planned(spec, Path(spec.results), Progress(sys.stderr, live=False))
    write_atomically(result_file, json.dumps(result, indent=1) + "\n")
    return int(result["exit_code"])


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:
        import traceback
        traceback.print_exc()
        sys.exit(EXIT_CRASH)
