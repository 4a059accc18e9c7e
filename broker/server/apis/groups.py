"""Classic group membership APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14)."""
from __future__ import annotations

from abc import abstractmethod
from typing import Any

from kafka.protocol.consumer.group import HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from ..errors import ErrorCode
from ..group_coordinator import GroupCoordinator, JoinResult
from ..group_routing import GroupRouting
from .base import ApiHandler, RequestContext

GROUP_KEY_TYPE = 0


class FindCoordinatorApi(ApiHandler):
    """A group's coordinator by `GroupRouting`'s rule; transaction coordinators do not exist here."""
    api_key = 10
    min_version = 0
    max_version = 4

    def __init__(self, routing: GroupRouting) -> None:
        self.routing = routing

    def _answer(self, key_type: int, key: str) -> tuple[ErrorCode, str | None, int, str, int]:
        if key_type != GROUP_KEY_TYPE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "only group coordinators exist on this broker", -1, "", -1
        if not isinstance(key, str):  # a null key decodes as None: no group has it
            return ErrorCode.INVALID_GROUP_ID, "a group id is a string, not null", -1, "", -1
        chosen = self.routing.coordinator(key)
        if chosen is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "no broker registered yet", -1, "", -1
        return ErrorCode.NONE, None, chosen.node_id, chosen.host, chosen.port

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        if ctx.version >= 4:
            coordinators = []
            for key in request.coordinator_keys:
                err, msg, node, host, port = self._answer(request.key_type, key)
                coordinators.append(FindCoordinatorResponse.Coordinator(
                    key=key, node_id=node, host=host, port=port, error_code=int(err), error_message=msg))
            return FindCoordinatorResponse(version=ctx.version, throttle_time_ms=0, coordinators=coordinators)
        err, msg, node, host, port = self._answer(request.key_type if ctx.version >= 1 else GROUP_KEY_TYPE,
                                                   request.key)
        return FindCoordinatorResponse(version=ctx.version, throttle_time_ms=0, error_code=int(err), error_message=msg,
                                       node_id=node, host=host, port=port)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        if version >= 4:
            return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=int(error))
                for k in request.coordinator_keys])
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=int(error), node_id=-1,
                                       host="", port=-1)


class CoordinatedApi(ApiHandler):
    """A request of one group: answered NOT_COORDINATOR where another broker coordinates it
    (`GroupRouting`), else served."""

    def __init__(self, groups: GroupCoordinator, routing: GroupRouting) -> None:
        self.groups = groups
        self.routing = routing

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        if not isinstance(request.group_id, str):  # a null group id decodes as None
            return self.error_response(request, ctx.version, ErrorCode.INVALID_GROUP_ID)
        if not self.routing.coordinates(request.group_id):
            return self.error_response(request, ctx.version, ErrorCode.NOT_COORDINATOR)
        return await self.serve(ctx, request)

    @abstractmethod
    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        ...


class JoinGroupApi(CoordinatedApi):
    api_key = 11
    min_version = 0
    max_version = 7

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        r = await self.groups.join_group(
            request.group_id, request.member_id, request.group_instance_id, ctx.client_id,
            request.session_timeout_ms, request.rebalance_timeout_ms, request.protocol_type,
            [(p.name, p.metadata) for p in request.protocols], require_known_member_id=ctx.version >= 4)
        return self._response(ctx.version, r)

    @staticmethod
    def _response(version: int, r: JoinResult) -> Any:
        members = [JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
                   for m, i, md in r.members]
        protocol_name = r.protocol_name if (r.protocol_name is not None or version >= 7) else ""
        return JoinGroupResponse(version=version, throttle_time_ms=0, error_code=int(r.error),
                                 generation_id=r.generation_id, protocol_type=r.protocol_type,
                                 protocol_name=protocol_name, leader=r.leader_id, member_id=r.member_id,
                                 members=members)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return self._response(version, JoinResult(error, request.member_id))


class SyncGroupApi(CoordinatedApi):
    api_key = 14
    min_version = 0
    max_version = 5

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        r = await self.groups.sync_group(request.group_id, request.generation_id, request.member_id,
                                         request.protocol_type, request.protocol_name,
                                         {a.member_id: a.assignment for a in request.assignments})
        return SyncGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=int(r.error),
                                 protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                                 assignment=r.assignment)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return SyncGroupResponse(version=version, throttle_time_ms=0, error_code=int(error), assignment=b"")


class HeartbeatApi(CoordinatedApi):
    api_key = 12
    min_version = 0
    max_version = 4

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        err = self.groups.heartbeat(request.group_id, request.member_id, request.generation_id)
        return HeartbeatResponse(version=ctx.version, throttle_time_ms=0, error_code=int(err))

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=int(error))


class LeaveGroupApi(CoordinatedApi):
    api_key = 13
    min_version = 0
    max_version = 4

    @staticmethod
    def _members(request: Any, version: int) -> list[tuple[str, str | None]]:
        if version >= 3:
            return [(m.member_id, m.group_instance_id) for m in request.members]
        return [(request.member_id, None)]

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        members = self._members(request, ctx.version)
        errors = self.groups.leave_group(request.group_id, [m for m, _ in members])
        if ctx.version >= 3:
            return LeaveGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=0, members=[
                LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=int(e))
                for (m, i), e in zip(members, errors)])
        return LeaveGroupResponse(version=ctx.version, throttle_time_ms=0, error_code=int(errors[0]))

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=int(error), members=[])
