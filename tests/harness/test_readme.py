"""The README leads (issue 41): at most 200 lines, saying first what `fencepost run` tests,
a screenshot of a report with a lost write, exactly two set-up commands (the second the one
`.ci/run` runs), commands that the real parser takes, files that are there, and links into
docs/ that resolve (docs/ too)."""
from __future__ import annotations

import re
import shlex

import pytest

from fencepost.harness.cli import build_parser
from tests.support.paths import ROOT

README = ROOT / "README.md"
SCREENSHOT = ROOT / "docs" / "images" / "report-lost-write.png"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def readme() -> str:
    return README.read_text()


def code_lines(text: str) -> list[str]:
    blocks = re.findall(r"^```\w*\n(.*?)^```$", text, flags=re.M | re.S)
    return [line for block in blocks for line in block.splitlines() if line.startswith("fencepost ")]


def test_the_readme_is_short_and_says_first_which_system_is_tested():
    text = readme()
    assert len(text.splitlines()) <= 200
    first = text.split("\n\n![", 1)[0]  # the paragraph before the screenshot
    assert "fencepost's own brokers" in first and "`fencepost run` with no flags" in first
    assert "--system\nkafka:VERSION" in first or "--system kafka:VERSION" in first


def test_the_screenshot_of_a_lost_write_is_there_and_small():
    assert f"]({SCREENSHOT.relative_to(ROOT)})" in readme()
    data = SCREENSHOT.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 300_000


def test_exactly_two_set_up_commands_and_ci_runs_the_second():
    section = readme().split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\|[^|]+\| `([^`]+)` \|$", section, flags=re.M)
    assert commands == ["python3 -m pip install -e . && fencepost run", "bash scripts/test-all"]
    assert "exec bash scripts/test-all" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("line", code_lines(README.read_text()))
def test_every_command_the_readme_shows_is_taken_by_the_parser(line):
    words = shlex.split(line)[1:]
    try:
        args = build_parser().parse_args(words)
    except SystemExit as e:  # a command or flag the parser does not know, or a bad value
        pytest.fail(f"the parser refuses {line!r} (exit {e.code})")
    assert args.command == words[0]


def test_the_readme_names_the_three_next_commands():
    assert code_lines(readme()) == ["fencepost run --system kafka:3.9.1 --nemesis leader-bounce",
                                    "fencepost campaign campaigns/ci.toml", "fencepost compare results/"]


def test_every_file_the_readme_names_is_there():
    named = set(re.findall(r"`((?:docs|campaigns|scripts|examples|broker|\.ci)/[\w./-]*)`", readme()))
    named |= set(re.findall(r"\b(docs/[\w/.-]+\.md)\b", readme()))
    assert named and [n for n in sorted(named) if not (ROOT / n).exists()] == []


def test_every_link_of_the_readme_and_the_docs_resolves():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [f"{page.relative_to(ROOT)}: {target}" for page in pages for target in LINK.findall(page.read_text())
              if not target.startswith(("http://", "https://")) and not (page.parent / target).exists()]
    assert broken == []
    assert "docs/README.md" in LINK.findall(readme())
