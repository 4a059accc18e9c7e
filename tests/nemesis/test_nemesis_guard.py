"""HealGuard: heals exactly once — on leaving the block, on SIGINT/SIGTERM (then the signal does what
it would have done), at interpreter exit — and puts the previous signal handlers back. Real
signals, sent to this process or to a child Python."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from fencepost.nemesis.guard import HealGuard
from tests.support.paths import ROOT as REPO


class Healer:
    def __init__(self, during=None) -> None:
        self.calls = []
        self.during = during

    def __call__(self) -> str:
        self.calls.append("start")
        if self.during:
            self.during()
        self.calls.append("end")
        return "healed"


def test_heals_once_when_the_block_ends_and_keeps_what_heal_returned():
    heal = Healer()
    with HealGuard(heal) as guard:
        assert heal.calls == []
    assert heal.calls == ["start", "end"] and guard.healed and guard.result == "healed"
    guard.heal_once()
    assert heal.calls == ["start", "end"]


def test_heals_when_the_block_raises_and_lets_the_exception_go_on():
    heal = Healer()
    with pytest.raises(RuntimeError, match="boom"):
        with HealGuard(heal):
            raise RuntimeError("boom")
    assert heal.calls == ["start", "end"]


def test_sigint_interrupts_the_block_heals_and_then_raises_keyboard_interrupt():
    heal = Healer()
    reached = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with HealGuard(heal):
            assert signal.getsignal(signal.SIGINT) is not before
            os.kill(os.getpid(), signal.SIGINT)
            reached.append("after the signal")
    assert heal.calls == ["start", "end"] and reached == []
    assert signal.getsignal(signal.SIGINT) is before


def test_a_previous_python_handler_is_called_after_healing():
    calls = []

    def previous(signum, frame):
        calls.append(("previous", signum, list(heal.calls)))
    heal = Healer()
    old = signal.signal(signal.SIGTERM, previous)
    try:
        with HealGuard(heal):
            os.kill(os.getpid(), signal.SIGTERM)
            calls.append("the block went on")
        assert calls == [("previous", signal.SIGTERM, ["start", "end"])]
        assert signal.getsignal(signal.SIGTERM) is previous
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_signal_during_healing_waits_until_the_heal_is_done():
    heal = Healer(during=lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        with HealGuard(heal):
            pass
    assert heal.calls == ["start", "end"]


def test_an_ignored_signal_stays_ignored():
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with HealGuard(Healer()):
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)


def test_outside_the_main_thread_it_heals_without_touching_signal_handlers():
    heal = Healer()
    seen = []

    def guarded():
        with HealGuard(heal):
            seen.append(signal.getsignal(signal.SIGINT))
    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=guarded)
    thread.start()
    thread.join()
    assert seen == [before] and heal.calls == ["start", "end"]


def run_child(body: str) -> subprocess.CompletedProcess:
    script = "from fencepost.nemesis.guard import HealGuard\n" \
             "def heal():\n    print('healed', flush=True)\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.integration
def test_sigterm_with_the_default_action_heals_then_ends_the_process_by_the_signal():
    child = run_child("""
        import os, signal
        with HealGuard(heal):
            os.kill(os.getpid(), signal.SIGTERM)
            print('not interrupted', flush=True)
        print('went on', flush=True)
    """)
    assert child.returncode == -signal.SIGTERM, child.stderr
    assert child.stdout == "healed\n"


@pytest.mark.integration
def test_an_exit_that_never_leaves_the_block_heals_at_exit_once():
    child = run_child("""
        import sys
        guard = HealGuard(heal).__enter__()
        sys.exit(3)
    """)
    assert child.returncode == 3, child.stderr
    assert child.stdout == "healed\n"


@pytest.mark.integration
def test_a_block_left_normally_does_not_heal_again_at_exit():
    child = run_child("""
        with HealGuard(heal):
            pass
        print('after', flush=True)
    """)
    assert child.returncode == 0, child.stderr
    assert child.stdout == "healed\nafter\n"
