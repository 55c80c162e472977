"""The codec seam (shared/normalize): one route for the runtime, ``binlake normalize`` and the tests:
the format's parser, the table rules, then the kernel's records."""

from __future__ import annotations

import pytest

from binlake.shared.normalize import Normalized, TableFilter, codec_for
from binlake.shared.parsing.context import ParseContext
from tests.corpus_cases import cases

pytestmark = pytest.mark.unit

CANAL = (
    b'{"data":[{"id":"1","v":"a"},{"id":"2","v":"b"}],"database":"shop","table":"orders","pkNames":["id"],'
    b'"isDdl":false,"type":"INSERT","es":1700000000000,"ts":1700000000001,"sql":"",'
    b'"sqlType":{"id":-5,"v":12},"mysqlType":{"id":"bigint","v":"varchar(8)"},"old":null}'
)


def test_table_rules_drop_and_count() -> None:
    kept = codec_for("canal-json", ParseContext(), tables=TableFilter.of(["shop.*"]))
    dropped = codec_for("canal-json", ParseContext(), tables=TableFilter.of(exclude=["*.orders"]))
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


def test_control_messages_name_their_kind() -> None:
    by_id = {case.id: case for case in cases()}
    for case_id, control in [
        ("debezium-json/edge-debezium-heartbeat", "heartbeat"),
        ("debezium-json/edge-transaction-begin", "transaction_begin"),
    ]:
        case = by_id[case_id]
        out = codec_for(case.format_id, case.context())(case.raw(), "t", 0, 1)
        assert isinstance(out, Normalized)
        assert (out.rows, out.control) == ([], control)
        assert len(out.heartbeats) == (control == "heartbeat")


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

    with pytest.raises(ConfigError, match=says):
        codec_for(format_id, ParseContext(options=options))


def test_every_format_has_one_home() -> None:
    """Each format id's spec lives in its services/<format>/ package with its parser and options."""
    from binlake.shared.parsing import registry

    for format_id in registry.format_ids():
        spec = registry.spec(format_id)
        assert spec.format_id == format_id
        home = registry.FORMATS[format_id].split(".spec:")[0]
        assert spec.parse.__module__.startswith(home), (format_id, spec.parse.__module__)
        assert spec.options is None or spec.options.startswith(home + "."), (format_id, spec.options)
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
