"""Topic creation and deletion as the request handlers see them: the local stand-in or the controller process.

Owns the one interface CreateTopics, DeleteTopics and Metadata's auto-creation
call, whoever decides: `LocalTopicAdmin` (a single node without a controller,
broker/server/local_controller.py) or `RemoteTopicAdmin` (the controller
process, asked over the controller channel; the answer is returned once this
broker applied a snapshot that shows the change, so a Metadata request right
after a CreateTopics sees the topic).
"""
from __future__ import annotations

import asyncio
from typing import Protocol

from fencepost.broker.common import controller_protocol as protocol
from fencepost.broker.common.controller_protocol import TopicState

from .controller_channel import ControllerChannel, ControllerUnavailable
from .errors import ErrorCode
from .local_controller import LocalController, TopicResult
from .metadata_cache import MetadataCache
from .metadata_listener import MetadataListener, topic_metadata

APPLY_WAIT_S = 5.0


class TopicAdmin(Protocol):
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str | None], validate_only: bool = False) -> TopicResult: ...

    async def delete_topic(self, name: str) -> TopicResult: ...


class LocalTopicAdmin:
    def __init__(self, controller: LocalController) -> None:
        self.controller = controller

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str | None], validate_only: bool = False) -> TopicResult:
        return self.controller.create_topic(name, num_partitions, replication_factor, configs, validate_only)

    async def delete_topic(self, name: str) -> TopicResult:
        return self.controller.delete_topic(name)


class RemoteTopicAdmin:
    def __init__(self, channel: ControllerChannel, metadata: MetadataCache, listener: MetadataListener) -> None:
        self.channel = channel
        self.metadata = metadata
        self.listener = listener

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str | None], validate_only: bool = False) -> TopicResult:
        answer = await self._ask({"type": protocol.CREATE_TOPIC, "name": name, "partitions": num_partitions,
                                  "replication_factor": replication_factor,
                                  "configs": {k: v for k, v in configs.items() if v is not None},
                                  "validate_only": validate_only})
        if answer.get("error"):
            return TopicResult(_error_code(answer["error"]), answer.get("message"))
        t = TopicState.from_dict(answer["topic"])
        if not validate_only:
            await self._until(lambda: self.metadata.topic(name) is not None)
        return TopicResult(ErrorCode.NONE, topic=topic_metadata(t.name, t.topic_id, t.partitions, t.configs))

    async def delete_topic(self, name: str) -> TopicResult:
        topic = self.metadata.topic(name)
        answer = await self._ask({"type": protocol.DELETE_TOPIC, "name": name})
        if answer.get("error"):
            return TopicResult(_error_code(answer["error"]), answer.get("message"))
        await self._until(lambda: self.metadata.topic(name) is None)
        return TopicResult(ErrorCode.NONE, topic=topic)

    async def _ask(self, message: dict) -> dict:
        try:
            return await self.channel.request(message)
        except ControllerUnavailable as e:
            return {"error": "NOT_CONTROLLER", "message": f"{e}; retry when the controller is reachable"}

    async def _until(self, condition) -> None:
        """Wait (bounded) until applied snapshots make `condition` true."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + APPLY_WAIT_S
        while not condition() and loop.time() < deadline:
            self.listener.applied.clear()
            try:
                await asyncio.wait_for(self.listener.applied.wait(), max(deadline - loop.time(), 0.001))
            except asyncio.TimeoutError:
                break


def _error_code(name: str) -> ErrorCode:
    try:
        return ErrorCode[name]
    except KeyError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
