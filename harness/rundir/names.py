"""The names in a run directory (docs/FORMATS.md), spelled here once.

A run directory is `<results>/<test-name>/<YYYYmmddTHHMMSS><UTC offset>-<6 hex>/`
(harness/rundir/run_dirs.py makes it); `<results>/latest` and `<results>/<test-name>/latest`
point at the newest. Every reader and writer of a run file takes its name from here.
"""
from __future__ import annotations

HISTORY_FILE = "history.jsonl"  # every operation, written as it happens
FINAL_FILE = "final.jsonl"  # the final reads and every replica's log
TEST_FILE = "test.json"  # the run spec, versions and the run's outcome
RESULTS_FILE = "results.json"  # the checker's verdict (fencepost check)
REPORT_FILE = "report.html"  # the report (fencepost report)
LOG_FILE = "fencepost.log"  # the harness's own log of the run
NODES_DIR = "nodes"  # each node's logs, collected at teardown
CLIENTS_DIR = "clients"  # <process>.log: a client's debug log, written when it was stuck, crashed or not closed
LATEST = "latest"  # the symlink to the newest run (or campaign)

# A campaign directory: `<results>/campaigns/<name>/<stamp>-<6 hex>/` holds its plan and, per
# run, `runs/<run id>/outcome.json` beside that run's own results folder.
CAMPAIGNS_DIR = "campaigns"
CAMPAIGN_FILE = "campaign.json"
OUTCOME_FILE = "outcome.json"
CAMPAIGN_RUNS_DIR = "runs"
# Folders at the top of a results folder that hold no run (clusters/: `fencepost cluster` state).
NOT_RUNS = ("clusters",)
# What else lives at the top of a results folder (index.html: harness/index/page.py) and the
# newest-run links: names a test or a campaign may not take.
RESERVED_NAMES = (*NOT_RUNS, CAMPAIGNS_DIR, "index.html", LATEST)

# What a run directory is: a folder holding one of these. The spec is written first (a
# run stopped in setup has no history), the history next; results.json only ever beside them.
RUN_MARKERS = (TEST_FILE, HISTORY_FILE)
# The files the report links to, in the order it lists them.
RUN_FILES = (HISTORY_FILE, FINAL_FILE, RESULTS_FILE, TEST_FILE, LOG_FILE)

RUN_DIR_HELP = (f"a run directory holds {HISTORY_FILE} (the operations), {FINAL_FILE} (the final "
                f"reads and replica logs) and optionally {TEST_FILE} (the test spec), as in "
                f"results/<test-name>/<YYYYmmddTHHMMSS><UTC offset>-<6 hex>/; give the path "
                f"of one, or results/{LATEST}")
