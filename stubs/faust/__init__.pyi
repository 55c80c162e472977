# Typed stubs for the part of faust-streaming 0.15.3 that tests.bench.faust_peer uses.
# (faust ships py.typed, but its annotations are loose; these stubs take precedence via mypy_path.)

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, NoReturn

__version__: str

class RecordMetadata:
    topic: str
    partition: int
    offset: int

class Message:
    topic: str
    partition: int
    offset: int
    timestamp: float
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]] | None

class EventT:
    message: Message

class StreamT:
    def events(self) -> AsyncIterator[EventT]: ...

class TopicT:
    async def send(
        self,
        *,
        key: bytes | None = None,
        value: bytes | None = None,
        partition: int | None = None,
        timestamp: float | None = None,
        headers: Sequence[tuple[str, bytes]] | Mapping[str, bytes] | None = None,
        force: bool = False,
    ) -> Awaitable[RecordMetadata]: ...

AgentFun = Callable[[StreamT], Awaitable[None]]

class App:
    def __init__(self, id: str, **options: Any) -> None: ...
    def topic(self, *topics: str, key_serializer: str | None = None, value_serializer: str | None = None) -> TopicT: ...
    def agent(
        self, channel: TopicT | str | None = None, *, name: str | None = None, sink: Sequence[Any] | None = None
    ) -> Callable[[AgentFun], object]: ...

class Worker:
    def __init__(
        self,
        *services: App,
        loglevel: str | int | None = None,
        quiet: bool = False,
        redirect_stdouts: bool | None = None,
        logfile: str | None = None,
    ) -> None: ...
    def execute_from_commandline(self) -> NoReturn: ...

