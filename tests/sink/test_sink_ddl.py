"""``ALTER TABLE ... ADD COLUMN`` statements, as the Spark sink's mirrors read them (no Spark needed)."""

from __future__ import annotations

import pytest

from binlake.spark_sink.mirror.control_events import added_columns
from binlake.spark_sink.mirror.plan import ColumnDesc

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "ALTER TABLE shop.t00 ADD COLUMN note varchar(20) NOT NULL DEFAULT '' COMMENT 'x, y'",
            [ColumnDesc("note", "string", None, None)],
        ),
        (
            "alter table `t` add `q` bigint(20) unsigned, add index i(q), add column (a decimal(38,10), b datetime(6))",
            [
                ColumnDesc("q", "uint64", None, None),
                ColumnDesc("a", "decimal", 38, 10),
                ColumnDesc("b", "datetime", 6, None),
            ],
        ),
        ("ALTER TABLE `shop`.`t` ADD COLUMN c INT AFTER b;", [ColumnDesc("c", "int32", None, None)]),
        ("ALTER TABLE t ADD price double precision", [ColumnDesc("price", "float64", None, None)]),
        ("ALTER ONLINE TABLE t ADD `we``ird` tinyint", [ColumnDesc("we`ird", "int8", None, None)]),
        ("ALTER TABLE t ADD PRIMARY KEY (id), ADD UNIQUE KEY u (x), ADD CONSTRAINT c CHECK (x > 0)", []),
        ("ALTER TABLE t DROP COLUMN x, MODIFY y int", []),
        ("ALTER TABLE t ADD zz frobnicate", []),  # a type nobody knows: the column waits for a typed row event
        ("CREATE TABLE t (id int)", []),
        ("", []),
    ],
)
def test_added_columns(sql: str, expected: list[ColumnDesc]) -> None:
    assert added_columns(sql) == expected
