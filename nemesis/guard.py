"""Heal always: a context manager that runs a heal function exactly once — when the block
ends (also by an exception), on SIGINT or SIGTERM, or at interpreter exit.

    with HealGuard(nemesis.heal):       # or HealGuard(cluster.heal)
        ...faults...

While the block runs (and only in the main thread, where Python delivers signals)
SIGINT and SIGTERM get a handler that raises `SignalReceived`: the block unwinds
through its `finally` clauses, the guard heals, puts the previous handlers back,
and then the signal does what it would have done without the guard — the previous
Python handler is called (for SIGINT by default: KeyboardInterrupt), or, when it
was the default action, the signal is sent again and ends the process. A signal
that was ignored stays ignored. Signals arriving while healing are held until the
heal is done (a second Ctrl-C does not leave the cluster half-healed).
An `atexit` hook covers an interpreter exit that never leaves the block (a
driver thread still going at exit); it is removed when the block ends.
"""
from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType, TracebackType
from typing import Any, Callable

GUARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalReceived(BaseException):
    """Raised in the guarded block when SIGINT/SIGTERM arrives; the guard heals, then redelivers."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"received {signal.Signals(signum).name}")
        self.signum = signum


class HealGuard:
    def __init__(self, heal: Callable[[], Any], signals: tuple[signal.Signals, ...] = GUARDED_SIGNALS) -> None:
        self._heal = heal
        self._signals = signals
        self._previous: dict[int, Any] = {}
        self._healing = False
        self.healed = False
        self.result: Any = None  # what heal returned
        self._held: int | None = None  # a signal that arrived while healing

    def __enter__(self) -> HealGuard:
        atexit.register(self.heal_once)
        if threading.current_thread() is threading.main_thread():
            for sig in self._signals:
                previous = signal.getsignal(sig)
                if previous is signal.SIG_IGN:
                    continue
                self._previous[sig] = previous
                signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        try:
            self.heal_once()
        finally:
            previous = dict(self._previous)
            self._restore()
        signum = exc.signum if isinstance(exc, SignalReceived) else self._held
        if signum is None:
            return False
        return self._redeliver(signum, previous.get(signum))

    def heal_once(self) -> None:
        """Heal unless already done (or under way)."""
        if self.healed or self._healing:
            return
        self._healing = True
        try:
            self.result = self._heal()
        finally:
            self._healing = False
            self.healed = True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._healing or self.healed:
            self._held = signum
            return
        raise SignalReceived(signum)

    def _restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()
        atexit.unregister(self.heal_once)

    @staticmethod
    def _redeliver(signum: int, previous: Any) -> bool:
        """Do what the signal would have done; True (swallow the SignalReceived) if that returns."""
        if callable(previous):
            previous(signum, None)  # e.g. default_int_handler raises KeyboardInterrupt
            return True
        if previous is signal.SIG_IGN:
            return True
        os.kill(os.getpid(), signum)  # the default action, with the default handler back
        return True
