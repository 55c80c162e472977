"""The native JSON view (``_kernel.render_json``, ``binlake normalize``'s renderer) is the Python view's
(``json_view.render``) byte for byte: on the golden corpus, generated traffic and any values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.shared.codec import avro, json_view
from binlake.shared.event.model import ChangeEvent, Column, Ddl, Origin, Source
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, Value
from binlake.shared.parsing.result import Parsed
from tests.corpus_cases import cases
from tests.support.lane_support import NEEDS_LANE

pytestmark = [pytest.mark.unit, NEEDS_LANE]
UTC = dt.UTC


def _kernel(event: ChangeEvent) -> bytes:
    from binlake.shared.kernel._kernel import render_json

    return render_json(avro.encode(event), avro.fingerprint())


def _event(after: dict[str, Value] | None, before: dict[str, Value] | None = None, **source: str) -> ChangeEvent:
    return ChangeEvent(
        op="UPDATE" if before is not None else "INSERT",
        source=Source("canal-json", "MYSQL", "db", None, "t", binlog_pos=4, **source),
        order_key="00000000000000000001.00000000000000000002.000000",
        ts_ms=-1,
        ingest_ts_ms=None,
        primary_key=["id", 'odd "name"\n'],
        columns=[Column("id", "bigint unsigned", "uint64"), Column("d", "decimal(65,30)", "decimal", 65, 30, True)],
        before=before,
        after=after,
        changed_columns=None if before is None else ["id"],
        ddl=None,
        origin=Origin("topic", 3, 2**62, 1),
    )


def test_every_golden_event() -> None:
    checked = 0
    for case in cases():
        outcome = case.run()
        if isinstance(outcome, Parsed):
            for event in outcome.events:
                assert _kernel(event) == json_view.render(event), case.id
                checked += 1
    assert checked > 150


def test_generated_traffic() -> None:
    from binlake.shared.generate import render
    from binlake.shared.generate.workload import Workload
    from binlake.shared.parsing import registry
    from binlake.shared.parsing.context import ParseContext

    for format_id in ("canal-json", "debezium-json", "oms-avro", "maxwell-json"):
        parse = render.parse_options(format_id)
        ctx = ParseContext(source_table=parse.get("source_table"), options=dict(parse.get("options", {})))
        render_fn = render.get(format_id)
        for change in Workload(seed=3, tables=3).run(200):
            outcome = registry.get(format_id)(render_fn(change, render.RenderContext()), ctx)
            assert isinstance(outcome, Parsed)
            for event in outcome.events:
                assert _kernel(event) == json_view.render(event)


def test_ddl_and_extremes() -> None:
    event = _event(None, None, gtid="g\u0001\u001f\x7f", sequence="é\u2028")
    event.op = "DDL"
    event.ddl = Ddl('ALTER TABLE t ADD c int -- \\ "quoted"\t', "ALTER_TABLE")
    assert _kernel(event) == json_view.render(event)
    extremes: dict[str, Value] = {
        "min": -(2**63),
        "max": 2**63 - 1,
        "big": BigInt(2**64 - 1),
        "tiny": Decimal("1E-400"),
        "first": dt.date(1, 1, 1),
        "last": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        "epoch": dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
        "time": SqlTime(-3020399000001),
        "zero": Unparsed("0000-00-00 00:00:00"),
        "empty": b"",
        "one": b"\xff",
        "two": b"\x00\xfe",
        "nan": float("nan"),
        "inf": float("-inf"),
    }
    event = _event(extremes, {})
    assert _kernel(event) == json_view.render(event)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(2**63, 2**80).map(BigInt),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
    st.integers(-(839 * 3600 * 10**6), 839 * 3600 * 10**6).map(SqlTime),
    st.text().map(Unparsed),
)


@given(st.dictionaries(st.text(), VALUES, max_size=12), st.dictionaries(st.text(max_size=3), VALUES, max_size=3))
def test_any_values(after: dict[str, Value], before: dict[str, Value]) -> None:
    event = _event(after, before)
    assert _kernel(event) == json_view.render(event)


def test_other_bytes_are_a_value_error() -> None:
    from binlake.shared.kernel._kernel import render_json

    good = avro.encode(_event({"a": 1}))
    for bad in (b"", good[:-1], good + b"\x00", b"\xc3\x01" + b"\x00" * 8 + good[10:]):
        with pytest.raises(ValueError, match="not a canonical change event"):
            render_json(bad, avro.fingerprint())
