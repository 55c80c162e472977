"""What the runtime learns from refused produces, and how a dead letter is made to fit."""

from __future__ import annotations

import hashlib

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotEnoughReplicasError,
    RecordTooLargeError,
    TopicAuthorizationFailedError,
)

from binlake.shared.kafka import letters
from binlake.shared.kafka.produce_errors import Hit, Treatment, learn, refused

pytestmark = pytest.mark.unit


def test_only_the_records_own_final_errors_are_refusals() -> None:
    assert refused(MessageSizeTooLargeError()) and refused(RecordTooLargeError())
    # Outages and a cluster that refuses the client as a whole: retried after a back-off, never dead-lettered.
    for error in (
        KafkaConnectionError(),
        KafkaTimeoutError(),
        NotEnoughReplicasError(),
        TopicAuthorizationFailedError(),
    ):
        assert not refused(error)


def test_a_shared_batch_makes_suspects_and_a_lone_refusal_decides() -> None:
    treatments: dict[int, Treatment] = {}
    shared = {7: Hit(letter=False, alone=False, error="MessageSizeTooLargeError", size=10)}
    assert learn(treatments, shared, "events")
    assert treatments == {7: Treatment()}  # a suspect: produced alone next time
    alone = {7: Hit(letter=False, alone=True, error="MessageSizeTooLargeError", size=601_364)}
    assert learn(treatments, alone, "events")
    reason = treatments[7].refusal
    assert reason is not None and "MessageSizeTooLargeError" in reason and "601364-byte" in reason
    letter = {7: Hit(letter=True, alone=True, error="MessageSizeTooLargeError", size=601_364)}
    assert learn(treatments, letter, "events") and treatments[7].bare_letter
    assert not learn(treatments, letter, "events"), "a refused bare letter teaches nothing: back off, do not loop"


def test_a_letter_keeps_bytes_that_fit_and_describes_what_it_cuts() -> None:
    headers = [("binlake.error.reason", "é".encode() * 2000)]
    whole = letters.dead_letter(b"k", b"v" * 10, headers, max_value_bytes=10)
    assert (whole.key, whole.value) == (b"k", b"v" * 10)
    reason = dict(whole.headers)["binlake.error.reason"]
    assert len(reason) <= letters.MAX_HEADER_BYTES and reason.decode().endswith("…")  # cut on a character
    value = bytes(range(256)) * 10
    cut = letters.dead_letter(b"k", value, [], max_value_bytes=100)
    dict_headers = dict(cut.headers)
    assert (cut.key, cut.value) == (b"k", value[:100])
    assert dict_headers[letters.H_VALUE_TRUNCATED] == b"true"
    assert dict_headers[letters.H_VALUE_LENGTH] == b"2560"
    assert dict_headers[letters.H_VALUE_SHA256] == hashlib.sha256(value).hexdigest().encode()
    bare = letters.dead_letter(b"k", value, [], max_value_bytes=100, bare=True)
    assert (bare.key, bare.value) == (None, b"")
    assert dict(bare.headers)[letters.H_KEY_SHA256] == hashlib.sha256(b"k").hexdigest().encode()
