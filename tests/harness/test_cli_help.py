"""What a user finds before running anything: `fencepost --version`, examples under
every command's --help, the choices of enumerated flags, shell completion generated
from the parser (and working in a real bash), and `fencepost doctor`."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

import confluent_kafka
import orjson
import pytest

from fencepost.harness.cli import build_parser, main
from fencepost.harness.provenance import fencepost_version, history_reader
from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "fencepost.harness.cli"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_version_names_fencepost_python_the_client_and_the_reader(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"fencepost {fencepost_version()}"
    assert re.fullmatch(r"Python 3\.\d+\.\d+", out[1])
    assert out[2] == (f"confluent-kafka {confluent_kafka.version()} "
                      f"(librdkafka {confluent_kafka.libversion()[0]})")
    assert out[3] == f"run files read by: {history_reader()}"


def test_every_command_shows_examples_of_itself_under_help(capsys):
    commands = _subparsers(build_parser())
    assert {"run", "check", "report", "trace", "doctor", "completion", "serve"} <= set(commands)
    for name in commands:
        assert main([name, "--help"]) == 0
        out = capsys.readouterr().out
        examples = out[out.index("examples:"):]
        assert f"fencepost {name}" in examples or name == "completion" and "fencepost completion" in examples, name
    for group, actions in (("cluster", ("up", "status", "down")), ("nemesis", ("start", "heal"))):
        for action in actions:
            assert main([group, action, "--help"]) == 0
            out = capsys.readouterr().out
            assert f"fencepost {group} {action}" in out[out.index("examples:"):], (group, action)
    assert main(["--help"]) == 0
    assert "examples:" in capsys.readouterr().out
    assert main(["check", "--help"]) == 0  # its own epilog (the reader) is kept before the examples
    out = capsys.readouterr().out
    assert "read by the" in out.split("examples:")[0]


def test_enumerated_flags_show_their_choices_and_refuse_others(capsys):
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    from fencepost.harness.run.spec import BACKENDS, FLUSHES, SCHEDULES, TRUNCATIONS

    for choices in (TRUNCATIONS, BACKENDS, FLUSHES, SCHEDULES):  # {hw,kip101,...}: the spec's own lists
        assert "{" + ",".join(choices) + "}" in out, choices
    assert main(["run", "--truncation", "kip999"]) == 254
    assert "invalid choice: 'kip999'" in capsys.readouterr().err
    assert main(["doctor", "--format", "yaml"]) == 254
    assert main(["nemesis", "start", "kill", "--target", "nobody"]) == 254


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion_from_the_parser_completes_commands_flags_and_choices(tmp_path):
    done = subprocess.run([*CLI, "completion", "bash"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    script = tmp_path / "fencepost.bash"
    script.write_text(done.stdout)

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"source {script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
                 f"COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n"
                 f"_shtab_fencepost; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
        ran = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout.split()

    assert complete("fencepost", "rep") == ["replay", "report"]
    assert complete("fencepost", "repo") == ["report"]
    assert complete("fencepost", "tr") == ["trace"]
    assert set(complete("fencepost", "do")) == {"doctor"}
    assert complete("fencepost", "run", "--trunc") == ["--truncation"]
    assert complete("fencepost", "run", "--truncation", "kip") == ["kip101", "kip279", "kip320"]
    assert complete("fencepost", "completion", "z") == ["zsh"]
    assert "--version" in complete("fencepost", "--v")


def test_zsh_completion_is_generated_from_the_same_parser():
    done = subprocess.run([*CLI, "completion", "zsh"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#compdef fencepost")
    for word in ("report", "doctor", "--truncation", "kip320", "--format"):
        assert word in done.stdout
    if shutil.which("zsh"):
        assert subprocess.run(["zsh", "-n"], input=done.stdout, text=True).returncode == 0


@pytest.mark.integration
def test_doctor_says_what_is_there_and_how_to_fix_what_is_not(tmp_path):
    done = subprocess.run([*CLI, "doctor", "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    found = {f["name"]: f for f in orjson.loads(done.stdout)}
    netem = ["netem"] if os.geteuid() == 0 else []  # probed only where the netns backend runs
    assert list(found) == ["root", "ip", "iptables", "netns backend", *netem, "Docker daemon", "/dev/fuse",
                           "java", "mvn", "chromium", "C reader"]
    assert found["root"]["ok"] == (os.geteuid() == 0)
    if netem:
        from fencepost.clusters import kernel_shaping_unavailable
        assert found["netem"]["ok"] == (kernel_shaping_unavailable("netns") is None)
    for tool in ("ip", "iptables", "mvn"):
        assert found[tool]["ok"] == (shutil.which(tool) is not None)
    assert found["chromium"]["ok"] == bool(shutil.which("chromium") or shutil.which("chromium-browser"))
    assert all(f["fix"] == "" for f in found.values() if f["ok"])
    assert all(f["fix"] and f["needed_for"] for f in found.values() if not f["ok"])

    # With nothing on PATH, the tools are missing, each with the command that installs it;
    # the netns line is the backend's own reason. Still exit 0: doctor reports, it does not judge.
    bare = subprocess.run([*CLI, "doctor"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PATH": str(tmp_path)})
    assert bare.returncode == 0, bare.stderr
    lines = bare.stdout.splitlines()
    for tool, fix in (("iptables", "apt-get install iptables"), ("java", "apt-get install openjdk-17-jdk-headless"),
                      ("mvn", "apt-get install maven"), ("chromium", "apt-get install chromium")):
        (at,) = [i for i, line in enumerate(lines) if re.match(rf"missing\s+{re.escape(tool)}\s", line)]
        assert any(fix in line for line in lines[at:at + 3]), (tool, lines[at:at + 3])
    netns = next(line for line in lines if re.match(r"\w+\s+netns backend ", line))
    assert netns.startswith("missing") and ("needs" in netns)
    assert re.search(rf"\d+ of {10 + len(netem)} ok; missing: .*iptables", bare.stdout)
