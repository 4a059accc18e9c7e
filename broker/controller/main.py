"""`python -m fencepost.broker controller ...`: parse the command line, lock and load the data directory, serve
until a signal."""
from __future__ import annotations

import asyncio
import logging
import sys
import time

from fencepost.broker.common.config import ConfigError
from fencepost.broker.common.logging_setup import configure_logging

from .config import ControllerConfig, parse_controller_args
from .server import ControllerServer
from .store import ControllerStore, StoreError

log = logging.getLogger("broker.controller.main")

LOG_NODE_NAME = "controller"  # shown where a broker's log shows its node id


def main(argv: list[str]) -> int:
    """Exit status: 0 after SIGTERM/SIGINT, 1 when the controller cannot start or persist, 2 for a bad command line."""
    try:
        config = parse_controller_args(argv)
    except ConfigError as e:
        print(f"controller: {e}", file=sys.stderr)
        return 2
    configure_logging(LOG_NODE_NAME, config.log_level, config.log_file)  # type: ignore[arg-type]
    return asyncio.run(run(config))


async def run(config: ControllerConfig) -> int:
    try:
        store = ControllerStore(config.data_dir)
    except StoreError as e:
        log.error("cannot start: %s", e)
        return 1
    try:
        try:
            state = store.load(config.session_timeout_ms, time.monotonic())
        except StoreError as e:
            log.error("cannot start: %s", e)
            return 1
        server = ControllerServer(config, state, store)
        try:
            host, port = await server.start()
        except OSError as e:
            log.error("cannot start: %s (is --listen %s:%d free?)", e, config.listen_host, config.listen_port)
            return 1
        log.info("controller listening on %s:%d, data dir %s, session timeout %d ms, state version %d "
                 "(%d brokers, %d topics)", host, port, config.data_dir, config.session_timeout_ms,
                 state.version, len(state.brokers), len(state.topics))
        try:
            await server.serve_until_stopped()
        finally:
            log.info("shutting down")
            await server.stop()
        return 1 if server.failure is not None else 0
    finally:
        store.close()
