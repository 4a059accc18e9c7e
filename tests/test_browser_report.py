"""What a person sees in a browser: Debian's Chromium, headless, renders the report
of a real-looking run (a generated history with a planted lost write, checked by
`check_run`, reported by `write_report`) and the run list that `fencepost serve`
serves, and the tests assert on the rendered DOM (`--dump-dom`, after the load
event: the page's own script has marked each image loaded or not) and on a
screenshot's pixels (the run's verdict badge is drawn red).

Chromium is kept off the network but for loopback: its proxy is a closed port on
127.0.0.1 (loopback itself bypasses proxies), background networking is off.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.test_report import PLOTS, planted_run
from tests.test_serve import FENCEPOST, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

INVALID_RED = (0xC6, 0x28, 0x28)  # harness/report/page.py: .invalid
VALID_GREEN = (0x2E, 0x7D, 0x32)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`; scripts/provision installs it)")
    return found


def _browse(profile: Path, *args: str) -> str:
    """Run headless Chromium once; its stdout."""
    command = [_chromium(), "--headless", "--disable-gpu", f"--user-data-dir={profile}",
               "--no-first-run", "--no-default-browser-check", "--disable-extensions",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--no-pings", "--proxy-server=http://127.0.0.1:9", "--hide-scrollbars", *args]
    if os.geteuid() == 0:
        command.insert(2, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


class _Dom(HTMLParser):
    """A dumped DOM's elements: tag, attributes, the text inside, the enclosing element."""

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[_Element] = []
        self._open: list[_Element] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = _Element(tag, {k: v or "" for k, v in attrs}, [],
                           self._open[-1] if self._open else None)
        self.elements.append(element)
        if tag not in ("img", "br", "meta", "input", "link"):
            self._open.append(element)

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data):
        for element in self._open:  # text counts for every enclosing element
            element.parts.append(data)

    def find(self, tag: str | None = None, inside: _Element | None = None, **attrs: str) -> list[_Element]:
        """Elements by tag and attributes (class_="a b": the exact class attribute;
        data_x: data-x), optionally only those inside `inside`."""
        wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        return [e for e in self.elements
                if (tag is None or e.tag == tag) and all(e.attrs.get(k) == v for k, v in wanted.items())
                and (inside is None or e.within(inside))]


@dataclass(eq=False)
class _Element:
    tag: str
    attrs: dict[str, str]
    parts: list[str]
    parent: _Element | None

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", "".join(self.parts)).strip()

    def within(self, other: _Element) -> bool:
        node = self.parent
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A results folder with one checked, reported run, served by `fencepost serve`."""
    from harness.report import write_report

    tmp = tmp_path_factory.mktemp("browser")
    results = tmp / "results"
    run_dir = planted_run(results)
    write_report(run_dir)
    server = subprocess.Popen([sys.executable, "-c", FENCEPOST, "serve", "--port", "0",
                               "--results", str(results)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", server.stdout.readline())
        assert match, "fencepost serve did not print its address"
        yield match.group(1), run_dir, tmp
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        server.stdout.close()


def test_the_report_shows_the_verdict_the_anomaly_and_its_plots(served):
    url, run_dir, tmp = served
    relative = run_dir.relative_to(run_dir.parent.parent).as_posix()
    dom = _Dom(_browse(tmp / "profile", "--dump-dom", f"{url}{relative}/report.html"))
    (verdict,) = dom.find("span", class_="verdict invalid")
    assert verdict.text == "INVALID"
    (row,) = dom.find("tr", class_="anomaly", data_anomaly="lost-write")
    name, count, example = dom.find("td", inside=row)
    assert name.text.startswith("lost-write") and "makes the run invalid" in name.text
    assert count.text == "1"
    assert "was acked at offset" in example.text
    images = dom.find("img")
    assert len(images) == len(PLOTS)
    assert [image.attrs.get("data-loaded") for image in images] == ["yes"] * len(PLOTS)
    assert dom.find("body", data_images_checked="yes")

    # The lost write's example op links into the history viewer, where its line is.
    links = [a.attrs["href"] for a in dom.find("a", inside=example, class_="op")]
    assert links and all(link.startswith("history.html#i") for link in links)
    index = links[0].split("#i")[1]
    history = _Dom(_browse(tmp / "profile", "--dump-dom", f"{url}{relative}/{links[0]}"))
    (line,) = history.find("tr", id=f"i{index}")
    assert "linked" in line.attrs["class"].split()
    assert [cell.text for cell in history.find("td", inside=line)][:1] == [index]


def test_the_report_file_renders_alone(served, tmp_path):
    _, run_dir, _ = served
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(run_dir / "report.html", alone / "report.html")  # no plots/ beside it
    dom = _Dom(_browse(tmp_path / "profile", "--dump-dom", (alone / "report.html").as_uri()))
    assert [image.attrs.get("data-loaded") for image in dom.find("img")] == ["yes"] * len(PLOTS)
    assert dom.find("span", class_="verdict invalid")


def test_the_run_list_shows_the_run_in_red_as_invalid(served):
    from PIL import Image

    url, run_dir, tmp = served
    dom = _Dom(_browse(tmp / "profile", "--dump-dom", url))
    (row,) = dom.find("tr", class_="run row-invalid")
    assert row.attrs["data-verdict"] == "invalid"
    assert "INVALID" in row.text and run_dir.name in row.text
    assert dom.find("a", class_="report", href=f"/{run_dir.parent.name}/{run_dir.name}/report.html")

    shot = tmp / "runs.png"
    _browse(tmp / "profile", f"--screenshot={shot}", "--window-size=1200,400", url)
    colours = {colour: n for n, colour in Image.open(shot).convert("RGB").getcolors(1 << 24)}
    assert colours.get(INVALID_RED, 0) > 500  # the badge: about 100 x 30 px
    assert VALID_GREEN not in colours
