"""Running a campaign: its runs, each on a fresh cluster, in
`RESULTS/campaigns/<name>/<YYYYmmddTHHMMSS><UTC offset>-<6 hex>/` (`latest` beside them):

  campaign.json              the campaign file's name, its source, the planned run ids, the shard
  runs/<run-id>/outcome.json the run's settings and configuration, what it was expected to yield,
                             verdict, status (expected, surprise, unknown, crashed), exit code,
                             anomaly counts, liveness, run directory (absolute, and relative to
                             the campaign directory), seconds
  runs/<run-id>/<run dirs>   what `fencepost run` writes (results/ of that run)
  runs/<run-id>/console.log  with --parallel: the run's own progress lines
  junit.xml                  one testcase per finished run (harness/campaign/junit.py)

Runs go one after another in this process, or (`parallel` > 1) up to N at once, each in a
child process (harness/campaign/child.py) on its own subnet (harness/campaign/slots.py);
after a child ends, whatever its cluster left is removed (`fencepost cleanup --cluster`).
`--resume` continues the latest campaign directory of that name: runs with an outcome.json
are skipped, and judged again by the campaign file's expectations as they are now (their
outcome.json rewritten where the expectation or status changed). A run that crashes is
recorded as crashed and the campaign goes on; Ctrl-C (or SIGTERM) stops it after the
running runs' own heal and teardown. `until_failure`
starts no run after the first that is not as expected (a surprise or a crash).

Exit code (harness/campaign/expect.py decides each run's status): 255 if any run crashed,
else 2 if a run without a verdict counts as a failure (`unknown_fails`), else 1 if any run
was a surprise, else 0 — so a canary cell that finds its bug is green.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from fencepost import IMPORT_ROOT
from fencepost.harness.campaign.expect import campaign_exit_code as exit_code_of
from fencepost.harness.campaign.expect import judge, judged_again, status_of
from fencepost.harness.campaign.junit import JUNIT_FILE, write_junit
from fencepost.harness.campaign.plan import Campaign, PlannedRun
from fencepost.harness.campaign.slots import first_subnet, for_slot
from fencepost.harness.errors import EXIT_CRASH, BadInput
from fencepost.harness.processes.interrupts import sigterm_as_interrupt
from fencepost.harness.run.spec import TestSpec
from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.names import CAMPAIGN_FILE, CAMPAIGN_RUNS_DIR, CAMPAIGNS_DIR, LATEST, OUTCOME_FILE
from fencepost.harness.rundir.run_dirs import new_run_dir

CONSOLE_FILE = "console.log"
HEARTBEAT_S = 30.0
POLL_S = 0.2
STOP_WAIT_S = 300.0  # how long an interrupted child may take for its heal and teardown

RunOne = Callable[[PlannedRun, Path], dict[str, Any]]
AfterRun = Callable[[dict[str, Any]], object]  # what it returns is not used


@dataclass(frozen=True)
class Options:
    parallel: int = 1
    until_failure: bool = False
    unknown_fails: bool = False
    subnet: str | None = None  # the first slot's subnet (harness/campaign/slots.py)
    heartbeat_s: float = HEARTBEAT_S


def campaign_dir(results: Path, campaign: Campaign, resume: bool) -> Path:
    """A fresh campaign directory, or with `resume` the latest one of this campaign (checked
    to be the same shard and to have planned the same runs, or their first part: cases added
    after the last case extend it)."""
    home = results / CAMPAIGNS_DIR / campaign.name
    shard = None if campaign.shard is None else str(campaign.shard)
    if not resume:
        directory = new_run_dir(results / CAMPAIGNS_DIR, campaign.name)
        _write_json(directory / CAMPAIGN_FILE, {"name": campaign.name, "source": str(campaign.source),
                                            "runs": [r.run_id for r in campaign.runs], "shard": shard,
                                            "share": [r.run_id for r in campaign.share],
                                            "baseline": campaign.baseline})
        return directory
    latest = home / LATEST
    if not latest.exists():
        raise BadInput(f"--resume: campaign {campaign.name} has no directory under {home} yet; "
                       "start it without --resume")
    directory = latest.resolve()
    plan = json.loads((directory / CAMPAIGN_FILE).read_text())
    if plan.get("shard") != shard:
        raise BadInput(f"--resume: {directory} is shard {plan.get('shard') or 'none (the whole campaign)'}, "
                       f"not {shard or 'the whole campaign'}: resume it with the same --shard")
    runs = [r.run_id for r in campaign.runs]
    if runs[:len(plan["runs"])] != plan["runs"]:
        raise BadInput(f"--resume: {directory} was planned with other runs than {campaign.source} now "
                       "gives (the matrix or base changed, or cases were added before the last one); start a "
                       "new campaign without --resume")
    if len(runs) > len(plan["runs"]):  # cases added after the last: the campaign grows by their runs
        _write_json(directory / CAMPAIGN_FILE, {**plan, "runs": runs, "share": [r.run_id for r in campaign.share]})
    return directory


def run_campaign(campaign: Campaign, directory: Path, run_one: RunOne | None = None, out: TextIO = sys.stderr,
                 options: Options = Options(), after_run: AfterRun | None = None) -> int:
    """Every run of this machine's share without an outcome; the campaign's exit code.
    `run_one` carries out a run in this process (one at a time); with `options.parallel` > 1
    runs go to child processes instead."""
    state = _State(campaign, directory, out, options, after_run)
    todo, rejudged = [], 0
    for run in campaign.share:
        done = directory / CAMPAIGN_RUNS_DIR / run.run_id / OUTCOME_FILE
        if done.is_file():
            recorded = json.loads(done.read_text())
            outcome = judged_again(recorded, run.expected, options.unknown_fails)
            if outcome is not recorded:  # the campaign file's [[expect]] rules changed since
                _write_json(done, outcome)
                rejudged += 1
            state.outcomes.append(outcome)
        else:
            todo.append(run)
    if state.outcomes:
        print(f"campaign {campaign.name}: resuming, {len(state.outcomes)} of {len(campaign.share)} runs done already"
              + (f"; {rejudged} judged again by the campaign file's expectations now" if rejudged else ""),
              file=out)
    first = first_subnet(campaign.runs[0].spec, options.subnet) if campaign.runs else None
    try:
        with sigterm_as_interrupt():  # SIGTERM ends the runs as Ctrl-C does: heal, teardown, cleanup
            if options.parallel > 1:
                _parallel(state, todo, first)
            else:
                if run_one is None:
                    raise ValueError("run_one is needed to run one run at a time")
                _sequential(state, todo, run_one, first)
    finally:
        write_junit(directory / JUNIT_FILE, campaign.name, state.outcomes)
    print(f"campaign {campaign.name}: {len(state.outcomes)} runs; {tally(state.outcomes)}", file=out)
    print(f"campaign directory: {directory}", file=out)
    return campaign_exit_code(state.outcomes)


class _State:
    """What a campaign has done so far, and the recording of each finished run."""

    def __init__(self, campaign: Campaign, directory: Path, out: TextIO, options: Options,
                 after_run: AfterRun | None) -> None:
        self.campaign, self.directory, self.out, self.options = campaign, directory, out, options
        self.after_run = after_run
        self.outcomes: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.finished_here = 0
        self.stop = False

    def say(self, text: str) -> None:
        print(f"campaign {self.campaign.name}: {text}", file=self.out, flush=True)

    def where(self, run: PlannedRun) -> Path:
        where = self.directory / CAMPAIGN_RUNS_DIR / run.run_id
        where.mkdir(parents=True, exist_ok=True)
        return where

    def record(self, run: PlannedRun, where: Path, fields: dict[str, Any], seconds: float) -> dict[str, Any]:
        status, why = judge(run.expected, fields.get("verdict", "crashed"), fields.get("liveness"),
                            self.options.unknown_fails, fields.get("premise"))
        outcome = {"run_id": run.run_id, "number": run.number, "settings": dict(run.settings),
                   "config": {"system": run.spec.system, "truncation": run.spec.truncation,
                              "faults": run.spec.faults or "none"},
                   "expected": run.expected.to_json(), "seconds": round(seconds, 1),
                   "time_limit": run.spec.time_limit, "parallel": self.options.parallel, **fields,
                   "status": status, "why": why}
        if fields.get("run_dir"):
            outcome["run_path"] = os.path.relpath(fields["run_dir"], self.directory)
        _write_json(where / OUTCOME_FILE, outcome)
        self.outcomes.append(outcome)
        self.finished_here += 1
        write_junit(self.directory / JUNIT_FILE, self.campaign.name, self.outcomes)
        found = ", ".join(f"{k} {n}" for k, n in sorted((fields.get("anomaly_counts") or {}).items()) if n)
        line = f"{run.run_id}: {why}" + (f" ({found})" if found and status != "crashed" else "")
        if status == "crashed" and fields.get("error"):
            line += f": {fields['error']}"
        self.say(line + f"; {seconds:.1f} s")
        if status == "surprise" and fields.get("run_dir"):
            self.say(f"  replay it: fencepost replay {fields['run_dir']}; "
                     f"reduce it: fencepost shrink {fields['run_dir']}")
        if self.options.until_failure and status in ("surprise", "crashed"):
            self.stop = True
            self.say("--until-failure: stopping at this run's unexpected result")
        if self.after_run is not None:
            self.after_run(outcome)
        return outcome

    def eta(self, left: int, running: int = 0) -> str:
        if not self.finished_here:
            return ""
        per_run = (time.monotonic() - self.started) / self.finished_here
        seconds = per_run * (left + running)
        return f"; ETA {int(seconds // 60)}m{int(seconds % 60):02d}s"


def _sequential(state: _State, todo: list[PlannedRun], run_one: RunOne, first: str | None) -> None:
    total = len(state.campaign.share)
    for n, run in enumerate(todo):
        if state.stop:
            break
        state.say(f"run {len(state.outcomes) + 1}/{total} {run.run_id}; {tally(state.outcomes)}"
                  f"{state.eta(len(todo) - n)}")
        where = state.where(run)
        began = time.monotonic()
        planned = run if first is None else _with_spec(run, for_slot(run.spec, 0, first))
        try:
            fields = run_one(planned, where)
        except KeyboardInterrupt:
            state.say("interrupted; continue with --resume")
            raise
        except Exception as e:  # a crashed run is a result of the campaign, not its end
            fields = {"verdict": "crashed", "exit_code": EXIT_CRASH, "error": f"{type(e).__name__}: {e}",
                      "traceback": traceback.format_exc(limit=8)}
            _clean_after(where)
        state.record(run, where, fields, time.monotonic() - began)


def _with_spec(run: PlannedRun, spec: TestSpec) -> PlannedRun:
    from dataclasses import replace
    return replace(run, spec=spec)


# --- runs side by side ------------------------------------------------------------------------


class ChildRun:
    """One run in a child process (harness/campaign/child.py), its output in console.log."""

    def __init__(self, spec: TestSpec, where: Path) -> None:
        self.where = where
        self.spec_file = where / "spec.json"
        self.result_file = where / "result.json"
        self.result_file.unlink(missing_ok=True)
        _write_json(self.spec_file, {**spec.to_json(), "results": str(where)})
        root = str(IMPORT_ROOT)  # the child runs this very code
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        self.console = open(where / CONSOLE_FILE, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fencepost.harness.campaign.child", str(self.spec_file), str(self.result_file)],
            stdin=subprocess.DEVNULL, stdout=self.console, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)  # a terminal's Ctrl-C reaches the campaign only, which ends each run once
        self.began = time.monotonic()

    def done(self) -> bool:
        return self.process.poll() is not None

    def fields(self) -> dict[str, Any]:
        """The outcome fields the child wrote; a crash (with the end of its console) when it wrote none."""
        self.console.close()
        try:
            return json.loads(self.result_file.read_text())
        except (OSError, ValueError):
            tail = _tail(self.where / CONSOLE_FILE)
            return {"verdict": "crashed", "exit_code": EXIT_CRASH,
                    "error": f"the run's process exited {self.process.returncode} without a result", "traceback": tail}

    def interrupt(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the child heals and tears down (SIGTERM as Ctrl-C)

    def wait(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.console.close()


def _parallel(state: _State, todo: list[PlannedRun], first: str | None) -> None:
    slots = list(range(state.options.parallel))
    running: dict[int, tuple[PlannedRun, ChildRun]] = {}
    total = len(state.campaign.share)
    last_beat = time.monotonic()
    try:
        while (todo and not state.stop) or running:
            while todo and slots and not state.stop:
                run, slot = todo.pop(0), slots.pop(0)
                spec = for_slot(run.spec, slot, first)
                subnet = spec.backend_options.get("subnet")
                state.say(f"run {len(state.outcomes) + len(running) + 1}/{total} {run.run_id} started (slot {slot + 1}"
                          f"{f', subnet {subnet}' if subnet else ''}); {tally(state.outcomes)}"
                          f"{state.eta(len(todo), len(running))}")
                running[slot] = (run, ChildRun(spec, state.where(run)))
            time.sleep(POLL_S)
            for slot, (run, child) in list(running.items()):
                if child.done():
                    del running[slot]
                    fields = child.fields()
                    _clean_after(child.where)
                    state.record(run, child.where, fields, time.monotonic() - child.began)
                    slots.append(slot)
                    slots.sort()
            if running and time.monotonic() - last_beat >= state.options.heartbeat_s:
                last_beat = time.monotonic()
                state.say(f"{len(running)} running ({', '.join(r.run_id for r, _ in running.values())}); "
                          f"{len(state.outcomes)}/{total} done; {tally(state.outcomes)}")
    except KeyboardInterrupt:
        state.say(f"interrupted; stopping {len(running)} running run(s) after their heal and teardown; "
                  "continue with --resume")
        for _, child in running.values():
            child.interrupt()
        for _, child in running.values():
            child.wait(STOP_WAIT_S)
            _clean_after(child.where)
        raise


def _clean_after(where: Path) -> None:
    """Remove whatever the clusters of the runs in `where` left (only theirs): their teardown does
    it when it runs; after a crash or a killed child this does."""
    names = [f"run-{d.name[-6:]}" for d in where.glob("*/*") if d.is_dir() and not d.is_symlink()]
    if not names:
        return
    try:
        from fencepost.clusters import cleanup_everything
        cleanup_everything(names)
    except Exception as e:  # cleanup must not end the campaign; `fencepost cleanup` can do it later
        print(f"campaign: cleanup after {where.name}: {type(e).__name__}: {e}", file=sys.stderr)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --- verdicts, tallies, exit code -------------------------------------------------------------


def campaign_exit_code(outcomes: list[dict[str, Any]]) -> int:
    return exit_code_of((status_of(o), o.get("verdict")) for o in outcomes)


def tally(outcomes: list[dict[str, Any]]) -> str:
    verdicts = {v: sum(o.get("verdict") == v for o in outcomes) for v in ("valid", "invalid", "unknown", "crashed")}
    expected_invalid = sum(o.get("verdict") == "invalid" and status_of(o) == "expected" for o in outcomes)
    surprises = sum(status_of(o) == "surprise" for o in outcomes)
    text = ", ".join(f"{v} {n}" + (f" ({expected_invalid} expected)" if v == "invalid" and expected_invalid else "")
                     for v, n in verdicts.items())
    return f"{text}; surprises {surprises}"


def _write_json(path: Path, data: Any) -> None:
    write_atomically(path, json.dumps(data, indent=1) + "\n")
