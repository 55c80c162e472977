import ssl

def create_ssl_context(
    *,
    cafile: str | None = ...,
    capath: str | None = ...,
    cadata: str | None = ...,
    certfile: str | None = ...,
    keyfile: str | None = ...,
    password: str | None = ...,
    crlfile: str | None = ...,
) -> ssl.SSLContext: ...
