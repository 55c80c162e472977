"""The codec seam (shared/normalize): one route for the runtime, ``binlake normalize`` and the tests.

The native codec publishes the Python codec's records byte for byte, says how its lane went, and
applies the table rules the same way; a lane that crashes on a message hands it to the parser."""

from __future__ import annotations

import pytest

from binlake.shared.kernel import LaneFailed, Taken
from binlake.shared.normalize import Normalized, PythonCodec, TableFilter, codec_for
from binlake.shared.normalize.native_codec import DECLINED, FAILED, TAKEN, NativeCodec
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Rejected
from tests.corpus_cases import cases
from tests.support.lane_support import NEEDS_LANE

pytestmark = pytest.mark.unit

CANAL = (
    b'{"data":[{"id":"1","v":"a"},{"id":"2","v":"b"}],"database":"shop","table":"orders","pkNames":["id"],'
    b'"isDdl":false,"type":"INSERT","es":1700000000000,"ts":1700000000001,"sql":"",'
    b'"sqlType":{"id":-5,"v":12},"mysqlType":{"id":"bigint","v":"varchar(8)"},"old":null}'
)


def _same(a: Normalized | Rejected, b: Normalized | Rejected) -> bool:
    if isinstance(a, Rejected) or isinstance(b, Rejected):
        return a == b
    return (a.rows, list(a.heartbeats), a.control, list(a.filtered)) == (
        b.rows,
        list(b.heartbeats),
        b.control,
        list(b.filtered),
    )


@NEEDS_LANE
def test_native_codec_is_the_python_codec_on_the_corpus() -> None:
    lanes = taken = 0
    for case in cases():
        ctx = case.context()
        native = codec_for(case.format_id, ctx)
        python = codec_for(case.format_id, ctx, fast_lane=False)
        assert not python.native
        raw = case.raw()
        fast, slow = native(raw, "corpus", 3, 41), python(raw, "corpus", 3, 41)
        assert _same(fast, slow), case.id
        if native.native:
            lanes += 1
            taken += isinstance(fast, Normalized) and fast.lane == TAKEN
        if isinstance(slow, Normalized):
            assert slow.lane is None
    assert lanes > 150 and taken > 100


@pytest.mark.parametrize("fast_lane", [False, True])
def test_table_rules_drop_and_count(fast_lane: bool) -> None:
    kept = codec_for("canal-json", ParseContext(), tables=TableFilter.of(["shop.*"]), fast_lane=fast_lane)
    dropped = codec_for("canal-json", ParseContext(), tables=TableFilter.of(exclude=["*.orders"]), fast_lane=fast_lane)
    out = kept(CANAL, "t", 0, 1)
    assert isinstance(out, Normalized) and out.records == 2 and not out.filtered
    assert [table for table, _, _, _ in out.rows] == ["shop.orders"]
    gone = dropped(CANAL, "t", 0, 1)
    assert (
        isinstance(gone, Normalized)
        and gone.rows == []
        and list(gone.filtered)
        in (
            [("shop.orders", 2)],
            [("shop.orders", 1), ("shop.orders", 1)],
        )
    )
    assert sum(count for _, count in gone.filtered) == 2
    assert gone.control is None  # dropped rows are not a control message


@pytest.mark.parametrize("fast_lane", [False, True])
def test_control_messages_name_their_kind(fast_lane: bool) -> None:
    by_id = {case.id: case for case in cases()}
    for case_id, control in [
        ("debezium-json/edge-debezium-heartbeat", "heartbeat"),
        ("debezium-json/edge-transaction-begin", "transaction_begin"),
    ]:
        case = by_id[case_id]
        out = codec_for(case.format_id, case.context(), fast_lane=fast_lane)(case.raw(), "t", 0, 1)
        assert isinstance(out, Normalized)
        assert (out.rows, out.control) == ([], control)
        assert len(out.heartbeats) == (control == "heartbeat")


class _Crashing:
    """A lane whose every message crashes it (as a Rust panic would): the parser must take them."""

    def parse(self, raw: bytes, topic: str, partition: int, offset: int) -> Taken | None:
        raise LaneFailed("panicked")

    def planned(self) -> int:
        return 0


class _Declining:
    def parse(self, raw: bytes, topic: str, partition: int, offset: int) -> Taken | None:
        return None

    def planned(self) -> int:
        return 0


@pytest.mark.parametrize(("lane", "how"), [(_Crashing(), FAILED), (_Declining(), DECLINED)])
def test_a_lane_that_leaves_a_message_hands_it_to_the_parser(lane: _Crashing | _Declining, how: str) -> None:
    python = PythonCodec("canal-json", ParseContext())
    out = NativeCodec(lane, python)(CANAL, "t", 0, 1)
    assert isinstance(out, Normalized) and out.lane == how
    assert _same(out, python(CANAL, "t", 0, 1))
    assert NativeCodec(lane, python)(b"{", "t", 0, 2) == python(b"{", "t", 0, 2)  # rejects stay rejects


def test_unknown_format_is_a_config_error() -> None:
    from binlake.shared.errors import ConfigError

    with pytest.raises(ConfigError, match="known formats"):
        codec_for("nope", ParseContext())


@pytest.mark.parametrize(
    ("format_id", "options", "says"),
    [
        ("canal-json", {"bytes_encoding": "b64"}, "bytes_encoding"),
        ("canal-json", {"primary_key": "id"}, r"primary_key: not an option of this format\); its options: bytes_enc"),
        ("ckafka-v1", {"db_type": "mysql"}, "takes no options"),
        ("maxwell-json", {"db_type": "mysql"}, r"db_type: not an option of this format\); its options: order"),
        ("maxwell-json", {"order": "binlog"}, "order: Input should be '', 'kafka' or 'position'"),
        ("debezium-json", {"order": "lsn"}, "order"),
        ("debezium-json", {"primary_key": 3}, "primary_key"),
    ],
)
def test_a_bad_option_is_a_config_error_at_start_up(format_id: str, options: dict[str, object], says: str) -> None:
    from binlake.shared.errors import ConfigError

    for fast_lane in (False, True):
        with pytest.raises(ConfigError, match=says):
            codec_for(format_id, ParseContext(options=options), fast_lane=fast_lane)


def test_every_format_has_one_home() -> None:
    """Each format id's spec lives in its services/<format>/ package with its parser, options and lane."""
    from binlake.shared.parsing import registry

    for format_id in registry.format_ids():
        spec = registry.spec(format_id)
        assert spec.format_id == format_id
        home = registry.FORMATS[format_id].split(".spec:")[0]
        assert spec.parse.__module__.startswith(home), (format_id, spec.parse.__module__)
        for target in (spec.options, spec.lane):
            assert target is None or target.startswith(home + "."), (format_id, target)
    assert registry.spec("auto").options is not None  # auto hands its options to what it detects


def test_shared_code_imports_no_private_name_of_a_format() -> None:
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path in (root / "shared").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("services", "binlake.services")):
                assert not [a.name for a in node.names if a.name.startswith("_")], path
                assert path.parent.name in ("demo",), f"{path} imports {node.module}: formats plug in by their spec"
