"""Builds the oms-avro golden inputs: Avro binary DTS Records, stored base64 in ``<case>.in.b64``.

Run from the repo root: ``.venv/bin/python tests/corpus/oms-avro/make_cases.py``.
Then ``.venv/bin/python -m tests.corpus_cases regen oms-avro`` and review every output.

The published samples (seed 004, "Avro JSON 訊息格式") are JSON renderings of
Records, with ``// ...`` doc comments; they are kept verbatim below, the
comments stripped before reading them. The renderings abbreviate: ``{"bytes":
"xxx"}`` is a bytes value, and an item ``{"value": "1", "precision": 1,
"scale": 0}`` (a string value with a scale) is a ``Decimal`` record while
``{"precision": 8, "value": "2"}`` is an ``Integer``. Union branches are named
explicitly (fastavro tuple notation) so nothing is guessed at encoding time.

The writer schema is read from the package's copy of the DTS schema
(``services/oms_avro/dts_record.avsc``); the ``bornTimestamp`` variant is built
here independently of the parser (one trailing long field).
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any, Final

import fastavro

HERE: Final = Path(__file__).parent
SCHEMA_PATH: Final = HERE.parents[2] / "services" / "oms_avro" / "dts_record.avsc"
NS: Final = "com.alibaba.dts.formats.avro."


# ---------------------------------------------------- published samples (verbatim)

SEED_INIT: Final = r'''
{
    "version": 1,
    "id": 0,
    "sourceTimestamp": 1702371565, // 時間戳記安全位元點。
    "sourcePosition": "", // 全量遷移無 position 等資訊。
    "safeSourcePosition": "",
    "sourceTxid": "",
    "source": {
        "sourceType": "MySQL", // 固定值 MySQL。
        "version": "OBMySQL" // 固定值 OBMySQL。
    },
    "operation": "INIT", // 全量類型為 INIT。
    "objectName": "test***",
    "processTimestamps": [
        1702371565238
    ], // 只有投遞時間。
    "tags": {
        "pk_uk_info": "{\"PRIMARY\":[\"id\"]}" // 只有主鍵類型。
    },
    "fields": [
        {
            "name": "id",
            "dataTypeNumber": 246
        }, // 每個列的類型。
        {
            "name": "bid",
            "dataTypeNumber": 3
        },
        {
            "name": "name",
            "dataTypeNumber": 15
        },
        {
            "name": "address",
            "dataTypeNumber": 254
        }
    ],
    "beforeImages": null, // 全量遷移前鏡像為空白。
    "afterImages": [ // 後鏡像。INTEGER 類型的 precision 衡為 8,FLOAT 類型的 precision 衡為 8、scale 衡為 64。
        {
            "value": "1",
            "precision": 1,
            "scale": 0
        },
        {
            "precision": 8,
            "value": "11"
        },
        {
            "charset": "utf8mb4",
            "value": {
                "bytes": "yyy"
            }
        },
        null
    ]
}
'''

SEED_INSERT: Final = r'''
{
  "version": 1, 
  "id": 170236922143600000, 
  "sourceTimestamp": 1702369092, 
  "sourcePosition": "1702369080",  // OceanBase 資料庫 MySQL 租戶的 checkpoint。
  "safeSourcePosition": "1702369080", // OceanBase 資料庫 MySQL 租戶的 checkpoint。
  "sourceTxid": "",                
  "source": {
    "sourceType": "MySQL", 
    "version": "OBMySQL"
  }, 
  "operation": "INSERT", 
  "objectName": "test***", 
  "processTimestamps": [1702369221480],  
  "tags": {
    "pk_uk_info": "{\"PRIMARY\":[\"id\"]}" 
  }, 
  "fields": [
    {"name": "id", "dataTypeNumber": 8},  
    {"name": "bid", "dataTypeNumber": 3}, 
    {"name": "name", "dataTypeNumber": 15}
  ], 
  "beforeImages": null,                // INSERT 前鏡像為空白。
  "afterImages": [
    {"precision": 8, "value": "2"},    
    {"precision": 8, "value": "12"}, 
    {"charset": "utf8mb4", "value": {"bytes": "xxx"}
    }
  ]
}
'''

SEED_UPDATE: Final = r'''
{
  "version": 1,
  "id": 170236975822100001, 
  "sourceTimestamp": 1702369757, 
  "sourcePosition": "1702369756", 
  "safeSourcePosition": "1702369756", 
  "sourceTxid": "", 
  "source": {
    "sourceType": "MySQL", 
    "version": "OBMySQL"
  }, 
  "operation": "UPDATE", 
  "objectName": "test***", 
  "processTimestamps": [1702369758237], 
  "tags": {
    "pk_uk_info": "{\"PRIMARY\":[\"id\"]}"
  }, 
  "fields": [
    {"name": "id", "dataTypeNumber": 8}, 
    {"name": "bid", "dataTypeNumber": 3}, 
    {"name": "name", "dataTypeNumber": 15}
  ], 
  "beforeImages": [   // UPDATE 存在前鏡像和後鏡像。
    {"precision": 8, "value": "3"}, 
    {"precision": 8, "value": "22"}, 
    {"charset": "utf8mb4", "value": {"bytes": "xxx"}}
  ], 
  "afterImages": [
    {"precision": 8, "value": "3"}, 
    {"precision": 8, "value": "44"}, 
    {"charset": "utf8mb4", "value": {"bytes": "xxx"}}
  ]
}
'''

SEED_DELETE: Final = r'''
{
  "version": 1, 
  "id": 170236976527500000, 
  "sourceTimestamp": 1702369764, 
  "sourcePosition": "1702369763", 
  "safeSourcePosition": "1702369763", 
  "sourceTxid": "", 
  "source": {
    "sourceType": "MySQL", 
    "version": "OBMySQL"
  }, 
  "operation": "DELETE", 
  "objectName": "test***", 
  "processTimestamps": [1702369765287], 
  "tags": {
    "pk_uk_info": "{\"PRIMARY\":[\"id\"]}"
  }, 
  "fields": [
    {"name": "id", "dataTypeNumber": 8}, 
    {"name": "bid", "dataTypeNumber": 3}, 
    {"name": "name", "dataTypeNumber": 15}
  ], 
  "beforeImages": [
    {"precision": 8, "value": "3"}, 
    {"precision": 8, "value": "44"}, 
    {"charset": "utf8mb4", "value": {"bytes": "xxx"}}
  ], 
  "afterImages": null // DELETE 後鏡像為空白。
}
'''

SEED_DDL: Final = r'''
{
    "version": 1,
    "id": 170236979372400000,
    "sourceTimestamp": 1702369793,
    "sourcePosition": "1702369792",
    "safeSourcePosition": "1702369792",
    "sourceTxid": "",
    "source": {
        "sourceType": "MySQL",
        "version": "OBMySQL"
    },
    "operation": "DDL",
    "objectName": "test***",
    "processTimestamps": [
        1702369794543
    ],
    "tags": {},
    "fields": null, // 增量同步處理 DDL 無 fields 和 beforeImages。
    "beforeImages": null,
    "afterImages": "alter table multi_db_multi_tbl add column address char(20) default null" // STRING 類型的 afterImages 為 DDL 語句。
}
'''


def schema(born: bool, wide_decimal: bool = False) -> Any:
    """The Record schema; ``wide_decimal``: a Decimal's precision and scale as longs (the same varints on
    the wire, so it writes what a reader takes for an int read past 32 bits)."""
    types: list[dict[str, Any]] = json.loads(SCHEMA_PATH.read_text("utf-8"))
    if wide_decimal:
        for named_type in types:
            if named_type.get("name", "").endswith("Decimal"):
                for field in named_type["fields"]:
                    if field["name"] in ("precision", "scale"):
                        field["type"] = "long"
    if born:
        types[-1]["fields"].append({"name": "bornTimestamp", "type": "long"})
    named: dict[str, Any] = {}
    for named_type in types[:-1]:
        fastavro.parse_schema(named_type, named_schemas=named)
    return fastavro.parse_schema(types[-1], named_schemas=named)


def strip_comments(text: str) -> str:
    return "\n".join(re.sub(r"\s*//.*$", "", line) for line in text.splitlines())


def item(rendered: Any) -> Any:
    """One image item of a published JSON rendering as a named union branch."""
    if rendered is None:
        return None
    if "charset" in rendered:
        value = rendered["value"]
        raw = value["bytes"].encode("utf-8") if isinstance(value, dict) else value
        return (NS + "Character", {"charset": rendered["charset"], "value": raw})
    if "scale" in rendered:
        kind = "Decimal" if isinstance(rendered["value"], str) else "Float"
        return (NS + kind, rendered)
    return (NS + "Integer", rendered)


def from_sample(text: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(strip_comments(text))
    for key in ("beforeImages", "afterImages"):
        if isinstance(doc[key], list):
            doc[key] = [item(x) for x in doc[key]]
    return doc


# ------------------------------------------------------------ edge helpers


def integer(text: str) -> Any:
    return (NS + "Integer", {"precision": 8, "value": text})


def chars(raw: bytes, charset: str = "utf8mb4") -> Any:
    return (NS + "Character", {"charset": charset, "value": raw})


def dec(text: str, precision: int, scale: int) -> Any:
    return (NS + "Decimal", {"value": text, "precision": precision, "scale": scale})


def flt(value: float) -> Any:
    return (NS + "Float", {"value": value, "precision": 8, "scale": 64})


def stamp(seconds: int, micros: int = 0) -> Any:
    return (NS + "Timestamp", {"timestamp": seconds, "millis": micros})


def dt(**parts: int) -> Any:
    fields = {k: parts.get(k) for k in ("year", "month", "day", "hour", "minute", "second", "millis")}
    return (NS + "DateTime", fields)


def obj(kind: str, type_name: str, value: Any) -> Any:
    return (NS + kind, {"type": type_name, "value": value})


def empty(symbol: str) -> Any:
    return (NS + "EmptyObject", symbol)


def record(
    operation: str,
    fields: list[tuple[str, int]] | None,
    before: Any = None,
    after: Any = None,
    *,
    id_: int = 170000000012300001,
    object_name: str | None = "shop.orders",
    pk: str | None = '{"PRIMARY":["id"]}',
    process: list[int] | None = None,
    version: int = 1,
) -> dict[str, Any]:
    return {
        "version": version,
        "id": id_,
        "sourceTimestamp": 1700000000,
        "sourcePosition": "1700000000",
        "safeSourcePosition": "1699999999",
        "sourceTxid": "tx-42",
        "source": {"sourceType": "MySQL", "version": "OBMySQL"},
        "operation": operation,
        "objectName": object_name,
        "processTimestamps": [1700000000500] if process is None else process,
        "tags": {} if pk is None else {"pk_uk_info": pk},
        "fields": None if fields is None else [{"name": n, "dataTypeNumber": c} for n, c in fields],
        "beforeImages": before,
        "afterImages": after,
    }


def encode(datum: dict[str, Any], born: int | None = None, wide_decimal: bool = False) -> bytes:
    out = io.BytesIO()
    if born is None:
        fastavro.schemaless_writer(out, schema(False, wide_decimal), datum)
    else:
        fastavro.schemaless_writer(out, schema(True), {**datum, "bornTimestamp": born})
    return out.getvalue()


def write(name: str, raw: bytes) -> None:
    (HERE / f"{name}.in.b64").write_text(base64.b64encode(raw).decode("ascii") + "\n")


def main() -> None:
    seeds = {
        "seed-init": SEED_INIT,
        "seed-insert": SEED_INSERT,
        "seed-update": SEED_UPDATE,
        "seed-delete": SEED_DELETE,
        "seed-ddl": SEED_DDL,
    }
    for name, text in seeds.items():
        write(name, encode(from_sample(text)))
    # The published rendering itself is JSON, not the Avro binary OMS sends.
    (HERE / "edge-json-rendering.in.json").write_text(strip_comments(SEED_INSERT).strip() + "\n")

    kv = [("id", 8), ("name", 15)]
    all_types = [
        ("id", 8), ("tiny", 1), ("ubig", 8), ("bits", 16), ("yr", 13), ("f32", 4), ("f64", 5), ("d", 246),
        ("day", 10), ("tm", 11), ("dtm", 18), ("ts", 17), ("doc", 245), ("color", 247), ("tags", 248),
        ("blob", 252), ("text", 252), ("vbin", 15), ("geo_wkt", 255), ("geo_wkb", 255), ("tz", 7),
    ]  # fmt: skip
    all_values = [
        integer("1"), integer("-128"), integer("18446744073709551615"), integer("5"), dt(year=2024),
        flt(1.5), flt(0.1), dec("-123456789012345678901234567890.123456789", 39, 9),
        dt(year=2024, month=2, day=29), dt(hour=-838, minute=59, second=59, millis=500000),
        dt(year=2024, month=12, day=31, hour=23, minute=59, second=59, millis=999999), stamp(1700000000, 123456),
        obj("TextObject", "JSON", '{"a": [1, 2]}'), obj("TextObject", "ENUM", "red"),
        obj("TextObject", "SET", "a,b"), obj("BinaryObject", "BLOB", b"\x00\x01\xfe\xff"),
        chars("長文本".encode(), "utf8mb4"), chars(b"\x00\xff", "binary"),
        obj("TextGeometry", "POINT", "POINT(1 2)"), obj("BinaryGeometry", "POINT", b"\x01\x01\x00\x00\x00"),
        (NS + "TimestampWithTimeZone", {"value": dt(year=2024, month=1, day=1, hour=8, minute=0, second=0)[1],
                                        "timezone": "+08:00"}),
    ]  # fmt: skip
    write("edge-all-types", encode(record("INSERT", all_types, after=all_values)))

    charset_fields = [("id", 8), ("l1", 15), ("gbk", 15), ("gb2312", 254), ("big5", 253), ("emoji", 15), ("raw", 254)]
    write(
        "edge-charsets",
        encode(
            record(
                "INSERT",
                charset_fields,
                after=[
                    integer("1"),
                    chars(b"caf\xe9 \x80 \x81", "latin1"),
                    chars("中文".encode("gbk"), "gbk"),
                    chars("简体".encode("gb2312"), "gb2312"),
                    chars("繁體".encode("big5"), "big5"),
                    chars("😀 ✓".encode(), "utf8mb4"),
                    chars(b"\x00\xff\x10", "binary"),
                ],
            )
        ),
    )
    write(
        "edge-invalid-times",
        encode(
            record(
                "INSERT",
                [("id", 8), ("ts", 17), ("dtm", 12), ("day", 10), ("ok", 7)],
                after=[
                    integer("1"),
                    stamp(-9223372022400),
                    dt(year=0, month=0, day=0, hour=0, minute=0, second=0, millis=0),
                    dt(year=2020, month=2, day=30),
                    stamp(-1, 500000),
                ],
            )
        ),
    )
    write(
        "edge-empty-objects",
        encode(
            record(
                "UPDATE",
                [("id", 8), ("name", 15), ("note", 15), ("gone", 15)],
                before=[integer("7"), empty("NONE"), empty("NULL"), None],
                after=[integer("7"), chars(b"new"), empty("NULL"), empty("NONE")],
            )
        ),
    )
    insert = record("INSERT", kv, after=[integer("2"), chars(b"born")], process=[])
    write("edge-born-timestamp", encode(insert, born=1700000000777))
    write("edge-born-and-process", encode({**insert, "processTimestamps": [1700000000500]}, born=1700000000777))
    seed_insert = encode(from_sample(SEED_INSERT))
    write("edge-truncated", seed_insert[:-3])
    write("edge-trailing-garbage", seed_insert + b"\x02\xff")
    write("edge-empty-message", b"")
    write("edge-random-bytes", bytes(range(7, 200, 3)))
    write(
        "edge-escaped-dot",
        encode(record("INSERT", kv, after=[integer("3"), chars(b"x")], object_name="my\\u002Edb.tbl\\u002E1")),
    )
    write(
        "edge-three-part-name",
        encode(record("DELETE", kv, before=[integer("4"), chars(b"y")], object_name="db1.sch1.tab1")),
    )
    write("edge-heartbeat", encode(record("HEARTBEAT", None, object_name=None, pk=None)))
    write("edge-begin", encode(record("BEGIN", None, object_name=None, pk=None)))
    write("edge-commit", encode(record("COMMIT", None, object_name=None, pk=None)))
    write("edge-missing-key-column", encode(record("DELETE", kv, before=[empty("NONE"), chars(b"z")])))
    write("edge-image-length-mismatch", encode(record("INSERT", kv, after=[integer("5")])))
    write("edge-bad-integer", encode(record("INSERT", kv, after=[integer("12a"), chars(b"z")])))
    write(
        "edge-decimal-precision-beyond-int",
        encode(record("INSERT", [("id", 8), ("amount", 246)], after=[integer("9"), dec("1.50", 2**40, 2)]), wide_decimal=True),
    )
    write("edge-unknown-charset", encode(record("INSERT", kv, after=[integer("6"), chars(b"z", "klingon")])))
    write("edge-invalid-gbk", encode(record("INSERT", kv, after=[integer("6"), chars(b"\x81", "gbk")])))
    write("edge-no-primary-key", encode(record("INSERT", kv, after=[integer("8"), chars(b"k")], pk=None)))
    write("edge-bad-pk-info", encode(record("INSERT", kv, after=[integer("8"), chars(b"k")], pk="not json")))
    write(
        "edge-ddl-truncate",
        encode(record("DDL", None, after="TRUNCATE TABLE orders", object_name="shop", pk=None, id_=170000000012300009)),
    )
    write("edge-version-2", encode(record("INSERT", kv, after=[integer("9"), chars(b"v")], version=2)))
    write(
        "edge-timestamp-as-datetime",
        encode(
            record(
                "INSERT",
                [("id", 8), ("ts", 7)],
                after=[integer("10"), dt(year=2024, month=1, day=1, hour=8, minute=0, second=0, millis=250000)],
            )
        ),
    )
    write("edge-unknown-type-code", encode(record("INSERT", [("id", 8), ("x", 99)], after=[integer("11"), flt(2.5)])))


if __name__ == "__main__":
    main()
