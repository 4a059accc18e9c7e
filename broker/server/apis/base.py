"""What every API handler is: its key, the versions it answers, how it answers, and its error response."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from ..codec import RequestHeader
from ..errors import ErrorCode
from ..network import ClientConnection


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    connection: ClientConnection

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""


class ApiHandler(ABC):
    """One Kafka API. `handle` returns the response body (None: no response is due, e.g. acks=0)."""
    api_key: ClassVar[int]
    min_version: ClassVar[int]
    max_version: ClassVar[int]

    @abstractmethod
    async def handle(self, ctx: RequestContext, request: Any) -> Any | None:
        ...

    @abstractmethod
    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        """The response that answers every part of `request` with `error`."""
