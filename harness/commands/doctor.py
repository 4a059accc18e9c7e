"""`fencepost doctor`: what this machine can run — root, `ip`, `iptables`, the netns
backend, a Docker daemon, /dev/fuse, java and mvn, Chromium, the C reader — each
ok or missing, with the command that fixes it (harness/doctor.py). Exit 0 whatever
is missing: it reports, it does not judge."""
from __future__ import annotations

import argparse
import sys

from fencepost.harness.errors import EXIT_VALID

NAME = "doctor"
HELP = "say what this machine can run (root, ip, iptables, Docker, java, mvn, Chromium, ...) and how to fix the rest"
FORMATS = ("text", "json")
EXAMPLES = (
    ("fencepost doctor", "one line per requirement: ok or missing, and the command that fixes it"),
    ("fencepost doctor --format json", "the same for scripts: a JSON list of findings"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text for people (default), json for scripts")


def run(args: argparse.Namespace) -> int:
    import orjson

    from fencepost.harness.doctor import examine

    findings = examine()
    if args.format == "json":
        sys.stdout.write(orjson.dumps([f.to_json() for f in findings], option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_VALID
    width = max(len(f.name) for f in findings)
    for f in findings:
        print(f"{'ok' if f.ok else 'missing':8} {f.name:{width}}  {f.detail}")
        print(f"{'':8} {'':{width}}  for: {f.needed_for}")
        if f.fix:
            print(f"{'':8} {'':{width}}  fix: {f.fix}")
    missing = [f.name for f in findings if not f.ok]
    print(f"\n{len(findings) - len(missing)} of {len(findings)} ok"
          + (f"; missing: {', '.join(missing)}" if missing else ""))
    return EXIT_VALID
