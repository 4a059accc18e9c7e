"""The controller's configuration: the `controller` command line, parsed and checked into one frozen dataclass."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from fencepost.broker.common.config import ConfigError, parse_host_port

MIN_SESSION_TIMEOUT_MS = 10


@dataclass(frozen=True)
class ControllerConfig:
    listen_host: str
    listen_port: int
    data_dir: Path
    session_timeout_ms: int = 6000
    log_file: Path | None = None
    log_level: str = "INFO"

    def __post_init__(self) -> None:
        if self.session_timeout_ms < MIN_SESSION_TIMEOUT_MS:
            raise ConfigError(f"--session-timeout-ms must be >= {MIN_SESSION_TIMEOUT_MS}, "
                              f"got {self.session_timeout_ms}")

    @property
    def expiry_check_interval_s(self) -> float:
        """How often sessions are checked: min(100 ms, a tenth of the session timeout)."""
        return min(0.1, self.session_timeout_ms / 10_000)


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a malformed command line is one line on stderr (and exit 2), not the usage block."""

    def error(self, message: str) -> NoReturn:
        print(f"controller: {message} (see python -m fencepost.broker controller --help)", file=sys.stderr)
        raise SystemExit(2)


def controller_argument_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="python -m fencepost.broker controller",
                       description="Run the controller of fencepost's own brokers: registrations, sessions, "
                                   "leader election, ISR changes; state kept in --data-dir.")
    p.add_argument("--listen", required=True, metavar="HOST:PORT", help="address brokers connect to (port 0: any)")
    p.add_argument("--data-dir", required=True, type=Path, help="directory of controller-state.json")
    p.add_argument("--session-timeout-ms", type=int, default=6000,
                   help="a broker without a heartbeat for this long is fenced (default 6000)")
    p.add_argument("--log-file", type=Path, help="also append the log to this file")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


def parse_controller_args(argv: list[str]) -> ControllerConfig:
    """Parse `controller` arguments; exits 2 on a malformed line, raises ConfigError on a bad value."""
    a = controller_argument_parser().parse_args(argv)
    host, port = parse_host_port(a.listen, "--listen")
    return ControllerConfig(listen_host=host, listen_port=port, data_dir=a.data_dir,
                            session_timeout_ms=a.session_timeout_ms, log_file=a.log_file, log_level=a.log_level)
