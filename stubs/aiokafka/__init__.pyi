# Typed stubs for the part of aiokafka 0.14 that binlake uses (aiokafka ships no types).
import asyncio
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from aiokafka.abc import ConsumerRebalanceListener

K = TypeVar("K")
V = TypeVar("V")

__version__: str

class TopicPartition(NamedTuple):
    topic: str
    partition: int

class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str

class ConsumerRecord(Generic[K, V]):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: K | None
    value: V | None
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[tuple[str, bytes]]

class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int | None
    timestamp_type: int
    log_start_offset: int | None

class BatchBuilder:
    def append(
        self,
        *,
        timestamp: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes]] = ...,
    ) -> object | None: ...
    def close(self) -> None: ...
    def record_count(self) -> int: ...

class ClusterMetadata:
    def partitions_for_topic(self, topic: str) -> set[int] | None: ...

class AIOKafkaClient:
    cluster: ClusterMetadata

class AIOKafkaProducer:
    client: AIOKafkaClient
    def __init__(
        self,
        *,
        bootstrap_servers: str | list[str] = ...,
        client_id: str | None = ...,
        acks: int | str = ...,
        compression_type: str | None = ...,
        partitioner: Callable[[bytes | None, list[int], list[int]], int] = ...,
        max_batch_size: int = ...,
        max_request_size: int = ...,
        linger_ms: int = ...,
        request_timeout_ms: int = ...,
        retry_backoff_ms: int = ...,
        security_protocol: str = ...,
        ssl_context: ssl.SSLContext | None = ...,
        enable_idempotence: bool = ...,
        transactional_id: str | None = ...,
        transaction_timeout_ms: int = ...,
        sasl_mechanism: str = ...,
        sasl_plain_username: str | None = ...,
        sasl_plain_password: str | None = ...,
        **kwargs: Any,
    ) -> None: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def flush(self) -> None: ...
    async def send(
        self,
        topic: str,
        value: bytes | None = ...,
        key: bytes | None = ...,
        partition: int | None = ...,
        timestamp_ms: int | None = ...,
        headers: Sequence[tuple[str, bytes]] | None = ...,
    ) -> asyncio.Future[RecordMetadata]: ...
    async def send_and_wait(
        self,
        topic: str,
        value: bytes | None = ...,
        key: bytes | None = ...,
        partition: int | None = ...,
        timestamp_ms: int | None = ...,
        headers: Sequence[tuple[str, bytes]] | None = ...,
    ) -> RecordMetadata: ...
    async def partitions_for(self, topic: str) -> set[int]: ...
    def create_batch(self) -> BatchBuilder: ...
    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int
    ) -> asyncio.Future[RecordMetadata]: ...
    async def begin_transaction(self) -> None: ...
    async def commit_transaction(self) -> None: ...
    async def abort_transaction(self) -> None: ...
    def transaction(self) -> Any: ...
    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None: ...

class AIOKafkaConsumer:
    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | list[str] = ...,
        client_id: str | None = ...,
        group_id: str | None = ...,
        fetch_max_bytes: int = ...,
        max_partition_fetch_bytes: int = ...,
        enable_auto_commit: bool = ...,
        auto_offset_reset: str = ...,
        isolation_level: str = ...,
        max_poll_records: int | None = ...,
        session_timeout_ms: int = ...,
        heartbeat_interval_ms: int = ...,
        max_poll_interval_ms: int = ...,
        security_protocol: str = ...,
        ssl_context: ssl.SSLContext | None = ...,
        sasl_mechanism: str = ...,
        sasl_plain_username: str | None = ...,
        sasl_plain_password: str | None = ...,
        **kwargs: Any,
    ) -> None: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def subscribe(
        self,
        topics: Iterable[str] = ...,
        pattern: str | None = ...,
        listener: ConsumerRebalanceListener | None = ...,
    ) -> None: ...
    def assign(self, partitions: Iterable[TopicPartition]) -> None: ...
    def assignment(self) -> set[TopicPartition]: ...
    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = ..., max_records: int | None = ...
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]: ...
    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[bytes, bytes]: ...
    async def committed(self, partition: TopicPartition) -> int | None: ...
    async def commit(self, offsets: dict[TopicPartition, int] | None = ...) -> None: ...
    def seek(self, partition: TopicPartition, offset: int) -> None: ...
    async def seek_to_beginning(self, *partitions: TopicPartition) -> None: ...
    async def seek_to_end(self, *partitions: TopicPartition) -> None: ...
    async def position(self, partition: TopicPartition) -> int: ...
    def highwater(self, partition: TopicPartition) -> int | None: ...
    def last_stable_offset(self, partition: TopicPartition) -> int | None: ...
    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    def partitions_for_topic(self, topic: str) -> set[int] | None: ...
    async def topics(self) -> set[str]: ...
    def pause(self, *partitions: TopicPartition) -> None: ...
    def resume(self, *partitions: TopicPartition) -> None: ...

__all__ = [
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "RecordMetadata",
    "TopicPartition",
]
