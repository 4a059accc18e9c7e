"""A real headless Chromium the tests drive as a person would: open a page, type
into a box, press Enter, move the mouse over something, read what is drawn
(geometry, text, a screenshot's pixels).

It speaks the Chrome DevTools Protocol over a pipe (`--remote-debugging-pipe`:
JSON messages separated by NUL bytes, Chromium reading fd 3 and writing fd 4), so
there is no port and no extra library. Chromium is kept off the network but for
loopback: its proxy is a closed port on 127.0.0.1, background networking is off.
One browser per `Browser` (tests run them one at a time: the machine is shared).
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

CHROMIUM_FLAGS = ("--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                  "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-pings", "--proxy-server=http://127.0.0.1:9", "--hide-scrollbars",
                  "--mute-audio")


def chromium() -> str:
    """The Chromium to use; skips the test when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`; scripts/provision installs it)")
    return found


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium and one page in it (a context manager)."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900):
        command = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
                   f"--window-size={width},{height}"]
        if os.geteuid() == 0:
            command.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def pipes_at_3_and_4() -> None:  # in the child, before the fds not passed are closed
            reading, writing = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=pipes_at_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.width, self.height = width, height
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self._send({"id": self._new_id(), "method": "Browser.close"})
                self.process.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()  # exactly the browser this object started
                self.process.wait(timeout=20)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- the protocol ------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_browser, orjson.dumps(message) + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium went away (exit {self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return orjson.loads(message)

    def call(self, method: str, session: bool = False, timeout: float = 120.0, **params: Any) -> dict:
        """One command; its result (an error raises BrowserError)."""
        ident = self._new_id()
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == ident:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    # -- what a person does ------------------------------------------------------------------

    def open(self, url: str, ready: str | None = None, timeout: float = 120.0) -> float:
        """Load `url`; with `ready`, also wait until that JavaScript expression is true.
        Returns the seconds it took."""
        started = time.monotonic()
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait("document.readyState === 'complete'", timeout)
        if ready:
            self.wait(ready, timeout)
        return time.monotonic() - started

    def js(self, expression: str, timeout: float = 120.0) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 60.0) -> float:
        """Wait until `expression` is true (while a page loads it may throw, or its
        context go away: that counts as not yet); the seconds it took."""
        started = time.monotonic()
        probe = f"(function () {{ try {{ return !!({expression}); }} catch (e) {{ return false; }} }})()"
        while True:
            try:
                if self.js(probe):
                    return time.monotonic() - started
            except BrowserError:
                pass  # "Execution context was destroyed": a navigation is under way
            if time.monotonic() - started > timeout:
                raise BrowserError(f"not true after {timeout} s: {expression}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        x, y = self.centre(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def hover(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=x, y=y)

    def type(self, selector: str, text: str) -> None:
        """Focus the field (a click) and type into it."""
        self.click(selector)
        self.call("Input.insertText", session=True, text=text)

    def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", session=True, type=kind, key="Enter", code="Enter",
                      windowsVirtualKeyCode=13, nativeVirtualKeyCode=13,
                      **({"text": "\r"} if kind == "keyDown" else {}))

    def centre(self, selector: str) -> tuple[float, float]:
        box = self.js(f"(function () {{ var e = document.querySelector({orjson.dumps(selector).decode()});"
                      f" if (!e) return null; e.scrollIntoView({{block: 'center'}});"
                      f" var r = e.getBoundingClientRect();"
                      f" return [r.left + r.width / 2, r.top + r.height / 2]; }})()")
        if box is None:
            raise BrowserError(f"nothing on the page matches {selector}")
        return box[0], box[1]

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Exceptions the page threw since it was opened."""
        return [e["params"]["exceptionDetails"].get("exception", {}).get("description", "")
                or e["params"]["exceptionDetails"].get("text", "")
                for e in self.events if e.get("method") == "Runtime.exceptionThrown"]
