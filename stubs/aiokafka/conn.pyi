import ssl
from typing import Any

class AIOKafkaConnection:
    def close(self, reason: Any = ..., exc: BaseException | None = ...) -> None: ...

async def create_conn(
    host: str,
    port: int,
    *,
    client_id: str = ...,
    request_timeout_ms: int = ...,
    ssl_context: ssl.SSLContext | None = ...,
    security_protocol: str = ...,
    max_idle_ms: int | None = ...,
    sasl_mechanism: str | None = ...,
    sasl_plain_username: str | None = ...,
    sasl_plain_password: str | None = ...,
) -> AIOKafkaConnection: ...
