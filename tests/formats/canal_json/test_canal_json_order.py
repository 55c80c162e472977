"""canal-json's ``order_key`` is the input's Kafka order (issue 16: tied and inverted keys).

A Canal flat message has no log position: ``es`` is the binlog event's time (one
second apart in practice, not monotonic across transactions) and ``id`` numbers a
batch, so every flat message of one batch shares it. The old key (es, id, row) tied
two changes of a row in one second and put row 2 of a message after row 0 of a later
message of the same batch.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from binlake.services.canal_json.parser import parse
from binlake.shared.parsing import registry
from tests.support.order_support import FIRST_OFFSET, assert_strictly_increasing, kafka_key, keys_in_input_order

pytestmark = pytest.mark.unit

ES: Final = 1700000000000
BATCH: Final = 7


def canal(
    kind: str, rows: list[dict[str, Any]], old: list[dict[str, Any]] | None = None, **fields: Any
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "data": rows,
        "database": "shop",
        "es": ES,
        "id": BATCH,
        "isDdl": False,
        "mysqlType": {"id": "int(11)", "v": "varchar(8)"},
        "old": old,
        "pkNames": ["id"],
        "sql": "",
        "sqlType": {"id": 4, "v": 12},
        "table": "orders",
        "ts": ES + 500,
        "type": kind,
    }
    doc.update(fields)
    return doc


def oms_canal(
    kind: str, rows: list[dict[str, Any]], old: list[dict[str, Any]] | None = None, **fields: Any
) -> dict[str, Any]:
    """OceanBase OMS's Canal serialization: no ``id``, ``es`` in ms."""
    doc = canal(kind, rows, old, mysqlType={"id": "int64", "v": "varchar"}, **fields)
    del doc["id"]
    return doc


def test_two_changes_of_a_row_in_one_second_and_batch_get_increasing_keys() -> None:
    # The reproduction: an INSERT then an UPDATE of one row, same es, same batch id.
    insert = canal("INSERT", [{"id": "1", "v": "a"}])
    update = canal("UPDATE", [{"id": "1", "v": "b"}], old=[{"v": "a"}])
    keys = keys_in_input_order(parse, [insert, update])
    assert keys == [kafka_key(FIRST_OFFSET), kafka_key(FIRST_OFFSET + 1)]


def test_row_two_of_a_message_sorts_before_row_zero_of_a_later_message() -> None:
    rows = [{"id": "1", "v": "a"}, {"id": "2", "v": "a"}, {"id": "3", "v": "a"}]
    again = canal("UPDATE", [{"id": "3", "v": "b"}], old=[{"v": "a"}])
    keys = keys_in_input_order(parse, [canal("INSERT", rows), again])
    assert_strictly_increasing(keys)
    assert keys[2] == kafka_key(FIRST_OFFSET, row=2) < keys[3] == kafka_key(FIRST_OFFSET + 1, row=0)


def test_an_earlier_event_time_at_a_later_offset_sorts_later() -> None:
    # A transaction that started earlier (smaller es) but committed later comes later in the binlog.
    first = canal("UPDATE", [{"id": "1", "v": "b"}], old=[{"v": "a"}], es=ES + 5000, id=8)
    started_earlier = canal("UPDATE", [{"id": "1", "v": "c"}], old=[{"v": "b"}], es=ES, id=9)
    truncate = {**canal("TRUNCATE", [], isDdl=True, sql="truncate table orders"), "data": None, "es": ES - 1}
    assert_strictly_increasing(keys_in_input_order(parse, [first, started_earlier, truncate]))


def test_oms_canal_ties_at_the_millisecond_no_more() -> None:
    update = oms_canal("UPDATE", [{"id": 1, "v": "b"}], old=[{"v": "a"}])
    rows = oms_canal("INSERT", [{"id": 2, "v": "a"}, {"id": 3, "v": "a"}])
    assert_strictly_increasing(keys_in_input_order(parse, [update, update, rows, update]))


def test_auto_detection_keeps_the_same_keys() -> None:
    insert = canal("INSERT", [{"id": "1", "v": "a"}, {"id": "2", "v": "a"}])
    again = canal("UPDATE", [{"id": "2", "v": "b"}], old=[{"v": "a"}])
    messages = [insert, again]
    assert keys_in_input_order(registry.get("auto"), messages) == keys_in_input_order(parse, messages)
