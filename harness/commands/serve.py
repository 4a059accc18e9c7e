"""`fencepost serve`: browse the results folder — runs newest first, coloured by
verdict, their reports and files — over HTTP (harness/serve.py)."""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from fencepost.harness.errors import EXIT_VALID

NAME = "serve"
HELP = "serve the results folder over HTTP: the runs by verdict, their reports and files"
EXAMPLES = (
    ("fencepost serve", "the runs under ./results at http://127.0.0.1:8080/"),
    ("fencepost serve --port 0 --results /data/results", "any free port (printed), another folder"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=_port, default=8080,
                        help="TCP port to listen on (default 8080; 0: any free port, printed)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="the results folder to serve (default results)")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0-65535)")
    return port


def run(args: argparse.Namespace) -> int:
    from fencepost.harness.serve import make_server, serve

    server = make_server(args.results, args.host, args.port, log=sys.stderr)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"fencepost serve: listening on {args.host}: anyone who reaches it can read the "
              f"results folder", file=sys.stderr)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops it as Ctrl-C does
    try:
        serve(server, sys.stdout)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return EXIT_VALID


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt

