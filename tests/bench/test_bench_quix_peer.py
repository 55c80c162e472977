"""The quix-streams peer of ``make bench`` (``tests.bench.quix_peer``) does the normalizer's work per message.

Its processing function, on its own codec (``peer_codec``: ``codec_for`` as the runtime calls it), must give
the records the normalizer's codec gives (``Normalizer(...).codec``), keys and Avro values byte for byte,
and dead-letter a reject as the normalizer does. No broker, no quix import: the quix glue only routes these.
"""

from __future__ import annotations

import pytest

from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.shared.kafka.records import H_REJECTED_AT, dead_letter_headers
from binlake.shared.kafka.runtime import Normalizer
from binlake.shared.parsing.result import Rejected
from tests.bench.quix_peer import Normalize, peer_codec
from tests.corpus_cases import CORPUS, Case

pytestmark = pytest.mark.unit

CASES = [
    "canal-json/edge-multirow-insert-all-types",
    "canal-json/edge-timestamp-in-source-zone",
    "canal-json/reject-bad-int-value",
    "drs-avro/dts-insert-mysql-typed-values",
    "drs-avro/dts-bad-integer",
    "debezium-smt/edge-delete-boolean-flag",
    "maxwell-json/reject-bad-position",
]
TOPIC = "vendor"


def _case(case_id: str) -> Case:
    format_id, name = case_id.split("/")
    return Case(format_id, name, CORPUS / format_id)


def _settings(case: Case) -> NormalizerSettings:
    """The normalizer's settings carrying the case's parse context (zone, options, Avro schema, table)."""
    ctx = case.context()
    options = {k: str(v) for k, v in ctx.options.items() if k != "avro_schema"}
    schema = next(case.folder.glob("*.avsc"), None) if "avro_schema" in ctx.options else None
    return NormalizerSettings(
        format=case.format_id,
        input_topics=[TOPIC],
        group_id="g",
        source_timezone=str(ctx.source_timezone),
        topic_tables={TOPIC: ctx.source_table} if ctx.source_table else {},
        format_options=options,
        avro_schema_file=str(schema) if schema is not None else None,
    )


@pytest.mark.parametrize("case_id", CASES)
def test_the_peer_writes_what_the_normalizer_writes(case_id: str) -> None:
    case = _case(case_id)
    settings = _settings(case)
    runtime = Normalizer(settings, KafkaSettings()).codec
    peer = Normalize(peer_codec(settings), dlq_max_value_bytes=settings.dlq_max_value_bytes)
    raw = case.raw()
    out = peer(raw, b"message-key", TOPIC, 2, 41)
    expected = runtime(raw, TOPIC, 2, 41)
    if isinstance(expected, Rejected):
        assert case.expected_reject() is not None
        [(key, value, headers)] = out
        assert (key, value) == (b"message-key", raw)
        assert headers is not None
        letter = dead_letter_headers(
            topic=TOPIC,
            partition=2,
            offset=41,
            format_id=case.format_id,
            code=expected.code,
            reason=expected.reason,
            parser_version=runtime.version,
        )
        assert [h for h in headers if h[0] != H_REJECTED_AT] == [h for h in letter if h[0] != H_REJECTED_AT]
        return
    assert expected.records > 0
    assert out == [(key, value, None) for key, value in expected.pairs()]


def test_a_case_whose_settings_came_through() -> None:
    """The cases above do carry their context: a zone, an Avro schema file, a table name."""
    assert _settings(_case("canal-json/edge-timestamp-in-source-zone")).source_timezone == "Asia/Shanghai"
    assert _settings(_case("drs-avro/dts-insert-mysql-typed-values")).avro_schema_file is not None
    assert _settings(_case("debezium-smt/edge-delete-boolean-flag")).topic_tables == {TOPIC: "shop.orders"}
