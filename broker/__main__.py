"""`python -m fencepost.broker serve ...` runs a broker node; `python -m fencepost.broker controller ...`
the controller; `python -m fencepost.broker dump-log ...` prints a data directory's logs."""
from __future__ import annotations

import asyncio
import sys

USAGE = """usage: python -m fencepost.broker <command> [options]

commands:
  serve      run one broker node (python -m fencepost.broker serve --help)
  controller run the controller of the brokers (python -m fencepost.broker controller --help)
  dump-log   print the record batches of a data directory (python -m fencepost.broker dump-log --help)
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "serve":
        return serve(rest)
    if command == "controller":
        from fencepost.broker.controller.main import main as controller_main
        return controller_main(rest)
    if command == "dump-log":
        from fencepost.broker.dumplog import main as dump_log_main
        return dump_log_main(rest)
    print(f"unknown command {command!r}\n{USAGE}", end="", file=sys.stderr)
    return 2


def serve(argv: list[str]) -> int:
    from fencepost.broker.common.config import ConfigError
    from fencepost.broker.common.logging_setup import configure_logging
    from fencepost.broker.server.config import parse_serve_args
    from fencepost.broker.server.kafka_server import run

    try:
        config = parse_serve_args(argv)
    except ConfigError as e:
        print(f"broker: {e}", file=sys.stderr)
        return 2
    configure_logging(config.node_id, config.log_level, config.log_file)
    try:
        return asyncio.run(run(config))
    except ConfigError as e:
        print(f"broker: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
