"""An S3-compatible server's test credentials, and the one signed request the tests make themselves: the
bucket's creation (S3A creates no bucket)."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import urllib.request
from typing import Final

ACCESS_KEY: Final = "binlake-test"
SECRET_KEY: Final = "binlake-test-secret"
BUCKET: Final = "lake"


def signed_put(endpoint: str, path: str) -> None:
    """An AWS Signature V4 PUT (the bucket's creation: S3A creates no bucket)."""
    now = dt.datetime.now(dt.UTC)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    host = endpoint.removeprefix("http://")
    payload = hashlib.sha256(b"").hexdigest()
    headers = f"host:{host}\nx-amz-content-sha256:{payload}\nx-amz-date:{stamp}\n"
    signed = "host;x-amz-content-sha256;x-amz-date"
    request = f"PUT\n{path}\n\n{headers}\n{signed}\n{payload}"
    scope = f"{day}/us-east-1/s3/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
    key = f"AWS4{SECRET_KEY}".encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    auth = f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, SignedHeaders={signed}, Signature={signature}"
    put = urllib.request.Request(
        endpoint + path,
        method="PUT",
        headers={"x-amz-date": stamp, "x-amz-content-sha256": payload, "Authorization": auth},
    )
    with urllib.request.urlopen(put, timeout=30) as answer:
        assert answer.status == 200
