"""The demo's pieces that need no broker: its traffic, the ground-truth comparison, the offline feed, the fleet.

The traffic test parses every message of every format with the real parser,
as the normalizer would: each change and schema change makes its event, in
order per table, and each poison message is rejected (so the demo's
expectations, events and dead letters, are the parsers' own).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from binlake.shared.cli.demo import controls, offline, summary, traffic
from binlake.shared.cli.demo.fleet import Fleet, session_members
from binlake.shared.cli.demo.scrape import NormalizerView, scrape
from binlake.shared.cli.demo.truth_check import same
from binlake.shared.devbroker.broker import free_port
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import SqlTime
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Rejected

pytestmark = pytest.mark.unit

CARRY_BOTH = {"canal-json", "ckafka-v1", "drs-json", "drs-json-c", "drs-avro", "debezium-json", "oms-avro"}
CARRY_BOTH |= {"oms-default", "oms-extend-column-type", "oms-dataworks", "oms-shareplex"}


def _context(format_id: str, topic: str, offset: int) -> ParseContext:
    parse = traffic.parse_options(format_id)
    options = dict(parse.get("options", {}))
    if "avro_schema" in parse:
        options["avro_schema"] = parse["avro_schema"]
    return ParseContext(topic=topic, partition=0, offset=offset, options=options)


@pytest.mark.parametrize("format_id", traffic.formats())
def test_every_message_reads_as_planned(format_id: str) -> None:
    item = traffic.build(format_id, changes=120, tables=3, seed=5, now_s=1_800_000_000)
    parser = registry.get(format_id)
    events: list[ChangeEvent] = []
    rejected, newest = 0, dict[str, str]()
    for offset, (key, value) in enumerate(item.messages):
        outcome = parser(value, _context(format_id, item.topic, offset))
        if isinstance(outcome, Rejected):
            assert key == b"poison", (outcome, value[:200])
            rejected += 1
            continue
        for event in outcome.events:
            table = f"{event.source.database}.{event.source.table}"
            assert key == table.encode()  # keyed by table: a TRUNCATE shares its rows' partition
            assert event.order_key > newest.get(table, ""), "positions run in stream order per table"
            newest[table] = event.order_key
            events.append(event)
    assert rejected == item.poison >= 3
    assert len(events) == item.events == 120 + len(item.controls)
    ddl = [e for e in events if e.op in ("DDL", "TRUNCATE")]
    kinds = sorted((e.ddl.kind if e.ddl else e.op, f"{e.source.database}.{e.source.table}") for e in ddl)
    db = traffic.database_of(format_id)
    expected = []
    if format_id in CARRY_BOTH | {"maxwell-json"}:
        expected.append(("ALTER_TABLE", f"{db}.t00"))
    if format_id in CARRY_BOTH | {"ogg-json"}:
        expected.append(("TRUNCATE_TABLE", f"{db}.t01"))
    assert kinds == expected
    alters = [e.ddl.sql for e in ddl if e.ddl and e.ddl.kind == "ALTER_TABLE"]
    assert alters in ([], [controls.sql("add_column", "t00")])
    added = {f"{db}.t00": [controls.ADDED_COLUMN]} if ("ALTER_TABLE", f"{db}.t00") in expected else {}
    assert item.added_columns == added


def test_truncated_table_truth_starts_afresh() -> None:
    item = traffic.build("canal-json", changes=300, tables=3, seed=2, now_s=1_800_000_000)
    assert item.controls == ["ADD COLUMN canal_json.t00", "TRUNCATE canal_json.t01"]
    cut = next(i for i, (_, m) in enumerate(item.messages) if b'"TRUNCATE"' in m)
    before = set()
    for key, message in item.messages[:cut]:
        doc = json.loads(message) if key != b"poison" else {}
        if doc.get("table") == "t01" and doc.get("data"):
            before.add(int(doc["data"][0]["id"]))
    assert before and not before & set(item.truth["canal_json.t01"])


def test_commit_times_end_now_and_never_go_back() -> None:
    item = traffic.build("debezium-json", changes=50, tables=2, seed=3, now_s=1_800_000_000)
    docs = [json.loads(m) for k, m in item.messages if k != b"poison"]
    stamps = [doc.get("payload", doc)["source"]["ts_ms"] for doc in docs]  # a schema change has no envelope
    assert stamps == sorted(stamps) and stamps[-1] <= 1_800_000_000_000 and stamps[0] >= 1_799_999_880_000


def test_same_compares_as_the_lake_types_values() -> None:
    assert same(2**64 - 5, Decimal(2**64 - 5)) and not same(2**64 - 5, Decimal(2**64 - 4))
    assert same(Decimal("12.5000000000"), Decimal("12.5")) and not same(Decimal("12.5"), Decimal("12.50001"))
    assert same(3.141592653589793, 3.141592653589793) and not same(0.1, 0.2)
    assert same(SqlTime(-3_600_000_000), -3_600_000_000)
    assert same(dt.datetime(2020, 1, 1, 1, 2, 3, 456789), dt.datetime(2020, 1, 1, 1, 2, 3, 456789))
    instant = dt.datetime(2024, 6, 1, 12, tzinfo=dt.UTC)
    assert same(instant, instant.astimezone(dt.timezone(dt.timedelta(hours=8))))
    assert not same(instant, instant + dt.timedelta(microseconds=1))
    assert same(dt.date(1999, 12, 31), dt.date(1999, 12, 31))
    assert same(b"\x00\xff", b"\x00\xff") and same(b"\x00\xff", base64.b64encode(b"\x00\xff").decode())
    assert same('{"k": 1, "tags": ["a", "b"]}', '{"k":1,"tags":["a","b"]}')
    assert not same('{"k": 1}', '{"k": 2}') and not same("a", "b")
    assert same(None, None) and not same(None, 0) and not same("", None)
    assert same(1, True) and same(0, 0)
    # A vendor without types (CKafka): the mirror holds its texts.
    assert same(dt.datetime(2024, 6, 23, 21, 32, 27, 507000, tzinfo=dt.UTC), "2024-06-23 21:32:27.507")
    assert same(dt.datetime(2020, 4, 8, 0, 47, 34, 267459), "2020-04-08 00:47:34.267459")
    assert same(dt.date(2018, 5, 22), "2018-05-22") and not same(dt.date(2018, 5, 22), "not a date")
    assert same(SqlTime(733 * 3_600_000_000 + 8_000_000), "733:00:08")
    assert same(Decimal("-9035385518520640952634348351.6432443090"), "-9035385518520640952634348351.6432443090")
    assert same(2**64 - 5, str(2**64 - 5)) and same(3.141592653589793, "3.141592653589793")
    # OMS Default writes a TIMESTAMP as epoch seconds, and gives no types.
    assert same(dt.datetime(2024, 7, 4, 19, 59, 20, 587000, tzinfo=dt.UTC), "1720123160.587")
    assert not same(dt.datetime(2024, 7, 4, 19, 59, 20, 587000, tzinfo=dt.UTC), "1720123160.588")


def test_offline_feeds_the_samples_bytes_as_they_are() -> None:
    """No decode and re-encode: maxwell's 39-digit amount reaches binlake normalize with every digit."""
    folder = offline.CORPUS / "maxwell-json"
    lines = offline.messages(folder)
    raw = (folder / "big-numbers.in.json").read_bytes()
    assert b"123456789012345678901234567890.123456789" in raw
    joined = raw.strip().replace(b"\n", b" ")
    assert joined in lines
    assert all(b"\n" not in line for line in lines)


def test_offline_run_keeps_big_numbers(tmp_path: Path) -> None:
    result = offline.normalize_folder(offline.CORPUS / "maxwell-json", tmp_path)
    assert result.events > 0
    events = (tmp_path / "maxwell-json.events.jsonl").read_text()
    assert '"123456789012345678901234567890.123456789"' in events
    assert "123456789012345680000000000000" not in events


def test_fleet_stops_a_service_by_pid_and_leaves_nothing(tmp_path: Path) -> None:
    """A real normalizer process pointed at no broker: it keeps retrying until SIGTERM stops it cleanly."""
    fleet = Fleet(tmp_path / "logs")
    port = free_port()
    env = {
        "BINLAKE_FORMAT": "canal-json",
        "BINLAKE_INPUT_TOPICS": "nothing",
        "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9",
        "BINLAKE_METRICS_PORT": str(port),
    }
    service = fleet.start("normalizer", ["normalizer"], env, port)
    try:
        deadline = time.monotonic() + 60
        while scrape(port) is None and service.exited() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # until it serves /metrics: started, retrying the broker
        assert service.exited() is None, service.log_tail()
        view = NormalizerView.of(scrape(port))  # what the progress shows, from its real /metrics
        assert view.up and (view.consumed, view.produced, sum(view.dead_letters.values())) == (0, 0, 0)
        assert session_members(service.pid) == [service.pid]
    finally:
        codes = fleet.stop_all(grace_s=30)
    assert codes == {"normalizer": 0}, service.log_tail()
    assert fleet.leftovers() == []
    assert service.log.exists()


def test_the_printed_query_line_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-liner the summary prints, run by a shell as a user would paste it: DuckDB reads the mirror."""
    from arro3.core import Array, DataType, Table
    from deltalake import write_deltalake

    lake = tmp_path / "demo-out" / "lake"
    table = Table.from_pydict(
        {
            "id": Array([1, 2, 3], type=DataType.int64()),
            "price": Array([1.5, 7.25, None], type=DataType.float64()),
        }
    )
    write_deltalake(str(lake / "mirror" / "canal_json.t00"), table)
    monkeypatch.chdir(tmp_path)
    line = summary.query_line(lake, "canal_json.t00")
    assert "demo-out/lake/mirror/canal_json.t00" in line and str(tmp_path) not in line  # relative to here
    code, text = summary.run_query_line(line)
    assert code == 0, text
    rows = [[cell.strip() for cell in row.split("│")[1:-1]] for row in text.splitlines() if row.startswith("│")]
    assert rows[-1] == ["3", "7.25"]


def test_ctrl_c_while_the_broker_starts_leaves_no_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C before the broker answers (and before broker.json names it) used to leave it running."""
    from binlake.shared.devbroker import broker

    calls = {"n": 0}

    def answers(port: int) -> bool:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return False

    monkeypatch.setattr(broker, "_answers", answers)
    stand_in = [sys.executable, "-c", "import time; time.sleep(120)"]  # a process that never answers
    before = set(broker._CHILDREN)  # a broker another test started may be running in this process
    with pytest.raises(KeyboardInterrupt):
        broker._launch(tmp_path, stand_in, tmp_path / "server.properties", free_port(), free_port(), timeout_s=60)
    assert set(broker._CHILDREN) == before  # the stand-in terminated and reaped (its exit read, no zombie)
    assert not (tmp_path / broker.STATE_FILE).exists()


def test_one_table_gets_the_add_column_then_the_truncate() -> None:
    item = traffic.build("canal-json", changes=90, tables=1, seed=4, now_s=1_800_000_000)
    assert item.controls == ["ADD COLUMN canal_json.t00", "TRUNCATE canal_json.t00"]
    assert item.added_columns == {"canal_json.t00": [controls.ADDED_COLUMN]}
