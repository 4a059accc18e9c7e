"""Classic consumer groups: membership, rebalances, and committed offsets (as Kafka's GroupCoordinator).

Owns each group's state machine — Empty, PreparingRebalance,
CompletingRebalance, Stable — its members with their session and rebalance
timeouts, generations, the chosen protocol and leader, and the assignments the
leader hands out. A rebalance completes when every known member has rejoined
or the largest rebalance timeout runs out (members that did not rejoin are
dropped); a member whose session times out without heartbeat is removed.
Committed offsets are validated here and kept by the `OffsetStore`.
Timers are event-loop callbacks; nothing runs on another thread.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from .errors import ErrorCode
from .offset_store import CommittedOffset, OffsetStore

log = logging.getLogger("broker.group")

MAX_METADATA_SIZE = 4096


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata): leader only


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: asyncio.Future | None = None
    sync_waiter: asyncio.Future | None = None
    session_timer: asyncio.TimerHandle | None = None

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_member_ids: set[str] = field(default_factory=set)
    rebalance_timer: asyncio.TimerHandle | None = None
    in_initial_delay: bool = False  # a rebalance of an empty group waits the full initial delay

    def supported_protocols(self) -> set[str]:
        names: set[str] | None = None
        for m in self.members.values():
            mine = {n for n, _ in m.protocols}
            names = mine if names is None else names & mine
        return names or set()


class GroupCoordinator:
    def __init__(self, offsets: OffsetStore, *, initial_rebalance_delay_ms: int = 0,
                 min_session_timeout_ms: int = 1000, max_session_timeout_ms: int = 1_800_000,
                 topic_exists: Callable[[str, int], bool] = lambda t, p: True) -> None:
        self.offsets = offsets
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.topic_exists = topic_exists
        self._groups: dict[str, Group] = {}

    def group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    # JoinGroup

    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinResult:
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        if rebalance_timeout_ms <= 0:
            rebalance_timeout_ms = session_timeout_ms  # JoinGroup v0 has no rebalance timeout
        group = self._groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = self._groups[group_id] = Group(group_id)
        if not protocols or (group.members and (protocol_type != group.protocol_type
                                                or not ({n for n, _ in protocols} & group.supported_protocols()))):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)

        if not member_id:
            new_id = f"{client_id}-{uuid.uuid4()}"
            if require_known_member_id:
                group.pending_member_ids.add(new_id)
                loop = asyncio.get_running_loop()
                loop.call_later(session_timeout_ms / 1000, group.pending_member_ids.discard, new_id)
                return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            member = self._add_member(group, new_id, group_instance_id, client_id, session_timeout_ms,
                                      rebalance_timeout_ms, protocol_type, protocols)
            self._prepare_rebalance(group, f"{new_id} joined")
        elif member_id in group.pending_member_ids:
            group.pending_member_ids.discard(member_id)
            member = self._add_member(group, member_id, group_instance_id, client_id, session_timeout_ms,
                                      rebalance_timeout_ms, protocol_type, protocols)
            self._prepare_rebalance(group, f"{member_id} joined")
        elif member_id not in group.members:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        else:
            member = group.members[member_id]
            changed = member.protocols != protocols
            member.protocols = protocols
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
            if group.state is GroupState.PREPARING_REBALANCE:
                pass
            elif not changed and group.state is GroupState.COMPLETING_REBALANCE:
                return self._join_result(group, member)  # a resent join of this generation
            elif not changed and group.state is GroupState.STABLE and member_id != group.leader_id:
                return self._join_result(group, member)
            else:
                self._prepare_rebalance(group, f"{member_id} rejoined with changed metadata")

        loop = asyncio.get_running_loop()
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        member.join_waiter = loop.create_future()
        waiter = member.join_waiter
        self._maybe_complete_join(group)
        return await waiter

    def _add_member(self, group: Group, member_id: str, group_instance_id: str | None, client_id: str,
                    session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                    protocols: list[tuple[str, bytes]]) -> Member:
        member = Member(member_id, group_instance_id, client_id, session_timeout_ms, rebalance_timeout_ms,
                        protocol_type, protocols)
        if not group.members:
            group.protocol_type = protocol_type
        group.members[member_id] = member
        self._schedule_session_expiry(group, member)
        return member

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for m in group.members.values():
                m.assignment = b""
                if m.sync_waiter is not None and not m.sync_waiter.done():
                    m.sync_waiter.set_result(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        if group.state is GroupState.PREPARING_REBALANCE:
            return
        was_empty = group.state is GroupState.EMPTY
        group.state = GroupState.PREPARING_REBALANCE
        group.in_initial_delay = was_empty and self.initial_rebalance_delay_ms > 0
        if was_empty:
            delay_ms = self.initial_rebalance_delay_ms
        else:
            delay_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if group.rebalance_timer is not None:
            group.rebalance_timer.cancel()
        loop = asyncio.get_running_loop()
        group.rebalance_timer = loop.call_later(delay_ms / 1000, self._rebalance_deadline, group)
        log.info("group %s preparing rebalance (generation %d): %s", group.group_id, group.generation_id, reason)

    def _rebalance_deadline(self, group: Group) -> None:
        group.rebalance_timer = None
        if group.state is GroupState.PREPARING_REBALANCE:
            self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE or group.rebalance_timer is None:
            return
        # The initial delay of an empty group lets more members arrive before the generation starts.
        if group.in_initial_delay:
            return
        if all(m.join_waiter is not None and not m.join_waiter.done() for m in group.members.values()):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        group.in_initial_delay = False
        if group.rebalance_timer is not None:
            group.rebalance_timer.cancel()
            group.rebalance_timer = None
        for m in list(group.members.values()):
            if m.join_waiter is None or m.join_waiter.done():
                log.info("group %s: member %s did not rejoin in time, removed", group.group_id, m.member_id)
                self._remove_member(group, m)
        group.generation_id += 1
        if not group.members:
            group.state = GroupState.EMPTY
            group.protocol_name = group.leader_id = None
            log.info("group %s is empty at generation %d", group.group_id, group.generation_id)
            return
        group.protocol_name = self._select_protocol(group)
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.state = GroupState.COMPLETING_REBALANCE
        log.info("group %s generation %d: %d members, leader %s, protocol %s", group.group_id,
                 group.generation_id, len(group.members), group.leader_id, group.protocol_name)
        for m in group.members.values():
            assert m.join_waiter is not None  # members without a waiting join were removed above
            m.join_waiter.set_result(self._join_result(group, m))
            self._schedule_session_expiry(group, m)

    @staticmethod
    def _select_protocol(group: Group) -> str:
        candidates = group.supported_protocols()
        votes: dict[str, int] = {}
        for m in group.members.values():
            choice = next(n for n, _ in m.protocols if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda n: votes[n])

    @staticmethod
    def _join_result(group: Group, member: Member) -> JoinResult:
        members: tuple = ()
        if member.member_id == group.leader_id:
            members = tuple((m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                            for m in group.members.values())
        return JoinResult(ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    # SyncGroup, Heartbeat, LeaveGroup

    async def sync_group(self, group_id: str, generation_id: int, member_id: str, protocol_type: str | None,
                         protocol_name: str | None, assignments: dict[str, bytes]) -> SyncResult:
        group = self._groups.get(group_id)
        err = self._check_member(group, member_id, generation_id)
        if err is not ErrorCode.NONE:
            return SyncResult(err)
        assert group is not None  # _check_member says NONE only of a known group
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[member_id]
        self._schedule_session_expiry(group, member)
        if group.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        if group.state is GroupState.STABLE:
            return SyncResult(ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name)
        member.sync_waiter = asyncio.get_running_loop().create_future()
        waiter = member.sync_waiter
        if member_id == group.leader_id:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.state = GroupState.STABLE
            log.info("group %s generation %d is stable", group.group_id, group.generation_id)
            for m in group.members.values():
                if m.sync_waiter is not None and not m.sync_waiter.done():
                    m.sync_waiter.set_result(SyncResult(ErrorCode.NONE, m.assignment, group.protocol_type,
                                                        group.protocol_name))
        return await waiter

    def heartbeat(self, group_id: str, member_id: str, generation_id: int) -> ErrorCode:
        group = self._groups.get(group_id)
        err = self._check_member(group, member_id, generation_id)
        if err is not ErrorCode.NONE:
            return err
        assert group is not None  # _check_member says NONE only of a known group
        self._schedule_session_expiry(group, group.members[member_id])
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(self, group_id: str, member_ids: list[str]) -> list[ErrorCode]:
        group = self._groups.get(group_id)
        if group is None:
            return [ErrorCode.UNKNOWN_MEMBER_ID for _ in member_ids]
        results = []
        for member_id in member_ids:
            if member_id in group.pending_member_ids:
                group.pending_member_ids.discard(member_id)
                results.append(ErrorCode.NONE)
                continue
            member = group.members.get(member_id)
            if member is None:
                results.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            log.info("group %s: member %s left", group_id, member_id)
            self._member_gone(group, member)
            results.append(ErrorCode.NONE)
        return results

    def _check_member(self, group: Group | None, member_id: str, generation_id: int) -> ErrorCode:
        if group is None or member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    # membership changes

    def _schedule_session_expiry(self, group: Group, member: Member) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
        loop = asyncio.get_running_loop()
        member.session_timer = loop.call_later(member.session_timeout_ms / 1000, self._session_expired, group,
                                               member)

    def _session_expired(self, group: Group, member: Member) -> None:
        member.session_timer = None
        if group.members.get(member.member_id) is not member:
            return
        if member.join_waiter is not None and not member.join_waiter.done():
            self._schedule_session_expiry(group, member)  # waiting in a rebalance counts as alive
            return
        log.info("group %s: member %s session timed out after %d ms", group.group_id, member.member_id,
                 member.session_timeout_ms)
        self._member_gone(group, member)

    def _member_gone(self, group: Group, member: Member) -> None:
        self._remove_member(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} left")
        if group.state is GroupState.PREPARING_REBALANCE:
            if not group.members:
                self._complete_join(group)
            else:
                self._maybe_complete_join(group)

    @staticmethod
    def _remove_member(group: Group, member: Member) -> None:
        group.members.pop(member.member_id, None)
        if member.session_timer is not None:
            member.session_timer.cancel()
            member.session_timer = None
        if member.join_waiter is not None and not member.join_waiter.done():
            member.join_waiter.set_result(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        if member.sync_waiter is not None and not member.sync_waiter.done():
            member.sync_waiter.set_result(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))

    # offsets

    def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                       offsets: dict[tuple[str, int], CommittedOffset]) -> dict[tuple[str, int], ErrorCode]:
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {tp: code for tp in offsets}

        if not group_id:
            return all_(ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self._groups[group_id] = Group(group_id)
        if generation_id < 0 and group.state is GroupState.EMPTY:
            pass  # a consumer that only stores its offsets here (assign, not subscribe)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            return all_(ErrorCode.REBALANCE_IN_PROGRESS)
        elif member_id not in group.members:
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        elif generation_id != group.generation_id:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        else:
            self._schedule_session_expiry(group, group.members[member_id])
        results: dict[tuple[str, int], ErrorCode] = {}
        accepted: dict[tuple[str, int], CommittedOffset] = {}
        for tp, c in offsets.items():
            if not self.topic_exists(*tp):
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif c.metadata is not None and len(c.metadata) > MAX_METADATA_SIZE:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                results[tp] = ErrorCode.NONE
                accepted[tp] = c
        self.offsets.commit(group_id, accepted)
        return results

    def fetch_offsets(self, group_id: str,
                      partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], CommittedOffset | None]:
        """Committed offsets of the group: for the partitions asked (None where nothing is committed), or all."""
        committed = self.offsets.fetch(group_id)
        if partitions is None:
            return dict(committed)
        return {tp: committed.get(tp) for tp in partitions}

    def on_topic_deleted(self, topic: str) -> None:
        self.offsets.delete_topic(topic)

    def shutdown(self) -> None:
        for group in self._groups.values():
            if group.rebalance_timer is not None:
                group.rebalance_timer.cancel()
            for m in group.members.values():
                if m.session_timer is not None:
                    m.session_timer.cancel()
