"""The demo's schema changes: one ``ADD COLUMN`` and one ``TRUNCATE`` in each vendor format that carries them.

The workload generator (``shared.generate``) plays row changes only; a vendor
writes DDL and TRUNCATE in its own shape, and this module writes them as the
format's parser documents it (see each ``services/<format>/parser.py`` and the
``tests/corpus`` samples): Canal-shaped DDL (``isDdl``) for canal-json, ckafka-v1
and the DRS formats, Maxwell's ``table-alter``, GoldenGate's ``op_type`` T,
OMS's ``DDL`` records, Debezium's schema-change event and ``op`` t.

``render(format_id, kind, at)`` returns None where the format carries no such
message: KafkaRiverCanal and Debezium's ExtractNewRecordState carry neither,
Maxwell no TRUNCATE, GoldenGate's JSON no DDL. ``at`` is a stand-in ``Change``
giving the database, the table and the position (sequence, binlog file and
offset, commit time) the message takes in the stream.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from typing import Any, Final, Literal

import fastavro
import orjson

from binlake.shared.generate.workload import PRIMARY_KEY, Change
from binlake.shared.parsing.order import binlog_index

Kind = Literal["add_column", "truncate"]
ADDED_COLUMN: Final = "added_note"
"""The column the demo's ``ALTER TABLE ... ADD COLUMN`` adds (VARCHAR, NULL in every row: no change sets it)."""
INGEST_LAG_MS: Final = 120
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def sql(kind: Kind, table: str) -> str:
    if kind == "add_column":
        return f"ALTER TABLE `{table}` ADD COLUMN `{ADDED_COLUMN}` VARCHAR(32) NULL"
    return f"TRUNCATE TABLE `{table}`"


def _canal(at: Change, kind: Kind, *, seconds: bool = False) -> dict[str, Any]:
    stamp = at.ts_ms // 1000 if seconds else at.ts_ms
    return {
        "data": None,
        "database": at.database,
        "es": stamp,
        "id": 0 if seconds else at.sequence,
        "isDdl": True,
        "mysqlType": None,
        "old": None,
        "pkNames": None,
        "sql": sql(kind, at.table),
        "sqlType": None,
        "table": at.table,
        "ts": stamp,
        "type": "ALTER" if kind == "add_column" else "TRUNCATE",
    }


def _canal_json(at: Change, kind: Kind) -> bytes:
    return orjson.dumps(_canal(at, kind))


def _ckafka(at: Change, kind: Kind) -> bytes:
    # CKafka's DDL is Canal-shaped, with ``es``/``ts`` in seconds and ``id`` 0 (its docs' sample).
    return orjson.dumps(_canal(at, kind, seconds=True))


def _drs_doc(at: Change, kind: Kind) -> dict[str, Any]:
    return {
        "mysqlType": None,
        "id": at.sequence,
        "es": at.ts_ms,
        "ts": at.ts_ms + INGEST_LAG_MS,
        "database": at.database,
        "table": at.table,
        "type": "DDL",
        "isDdl": True,
        "sql": sql(kind, at.table),
        "sqlType": None,
        "data": None,
        "old": None,
        "pkNames": None,
    }


def _drs_json(at: Change, kind: Kind) -> bytes:
    return orjson.dumps(_drs_doc(at, kind))


def _drs_avro(at: Change, kind: Kind) -> bytes:
    from binlake.shared.generate.render.canal_family import DRS_FLAT_SCHEMA

    record = {**_drs_doc(at, kind), "mysqlType": {}, "sqlType": {}}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(DRS_FLAT_SCHEMA), record)
    return out.getvalue()


def _maxwell(at: Change, kind: Kind) -> bytes | None:
    if kind != "add_column":
        return None  # Maxwell writes no message for a TRUNCATE
    doc = {
        "type": "table-alter",
        "database": at.database,
        "table": at.table,
        "ts": at.ts_ms,  # DDL messages carry milliseconds
        "sql": sql(kind, at.table),
        "position": f"{at.binlog_file}:{at.binlog_pos}",
    }
    return orjson.dumps(doc)


def _local(ms: int, sep: str = " ") -> str:
    return (_EPOCH + dt.timedelta(milliseconds=ms)).replace(tzinfo=None).isoformat(sep=sep, timespec="microseconds")


def _ogg(at: Change, kind: Kind) -> bytes | None:
    if kind != "truncate":
        return None  # GoldenGate's JSON formatter writes no DDL
    doc = {
        "table": f"{at.database}.{at.table}",
        "op_type": "T",
        "op_ts": _local(at.ts_ms),
        "current_ts": _local(at.ts_ms + INGEST_LAG_MS, "T"),
        "pos": f"{binlog_index(at.binlog_file):010d}{at.binlog_pos:010d}",
        "tokens": {"txid": str(at.txid)},
    }
    return orjson.dumps(doc)


def _oms_default(at: Change, kind: Kind) -> bytes:
    seconds = str(at.ts_ms // 1000)
    doc = {
        "prevStruct": None,
        "postStruct": {"ddl": sql(kind, at.table)},
        "allMetaData": {
            "checkpoint": seconds,
            "dbType": "MYSQL",
            "storeDataSequence": None,
            "db": at.database,
            "timestamp": seconds,
            "uniqueId": None,
            "ddlType": "ALTER" if kind == "add_column" else "TRUNCATE",
            "record_primary_key": None,
            "source_identity": None,
            "record_primary_value": None,
            "table_name": at.table,
        },
        "recordType": "DDL",
    }
    return orjson.dumps(doc)


def _oms_dataworks(at: Change, kind: Kind) -> bytes:
    doc = {
        "version": "2.0",
        "schema": {
            "source": {"dbType": "mysql", "dbVersion": None, "dbName": at.database, "schema": None, "table": at.table},
            "column": None,
            "pk": None,
        },
        "payload": {
            "before": None,
            "after": None,
            "op": "ALTER" if kind == "add_column" else "TRUNCATE",
            "timestamp": {"eventTime": at.ts_ms, "systemTime": at.ts_ms + 795, "checkpointTime": at.ts_ms // 1000},
            "ddl": {"text": sql(kind, at.table)},
            "scn": "null",
        },
        "extend": {},
    }
    return orjson.dumps(doc)


def _oms_shareplex(at: Change, kind: Kind) -> bytes:
    table = f"{at.database}.{at.table}"
    doc = {
        "data": {},
        "meta": {
            "posttime": _local(at.ts_ms + 1000, "T")[:19],
            "op": "ddl",
            "size": 0,
            "time": _local(at.ts_ms, "T")[:19],
            "idx": "0/0",
            "seq": 0,
            "table": table,
            "rowid": f"{table}-",
            "trans": None,
            "scn": "null",
        },
        "sql": {"ddl": sql(kind, at.table)},
    }
    return orjson.dumps(doc)


def _oms_avro(at: Change, kind: Kind) -> bytes:
    from binlake.services.oms_avro.parser import parsed_schema

    seconds = at.ts_ms // 1000
    record = {
        "version": 1,
        "id": 0,
        "sourceTimestamp": seconds,
        "sourcePosition": str(seconds),
        "safeSourcePosition": str(seconds),
        "sourceTxid": str(at.txid),
        "source": {"sourceType": "MySQL", "version": "OBMySQL"},
        "operation": "DDL",
        "objectName": f"{at.database}.{at.table}",
        "processTimestamps": [at.ts_ms + 480],
        "tags": {},
        "fields": None,
        "beforeImages": None,
        "afterImages": sql(kind, at.table),  # a DDL record's SQL text
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema(), record)
    return out.getvalue()


def _debezium_source(at: Change) -> dict[str, Any]:
    return {
        "version": "2.5.0.Final",
        "connector": "mysql",
        "name": "binlake",
        "ts_ms": at.ts_ms,
        "snapshot": "false",
        "db": at.database,
        "sequence": None,
        "table": at.table,
        "server_id": 1,
        "gtid": None,
        "file": at.binlog_file,
        "pos": at.binlog_pos,
        "row": 0,
        "thread": None,
        "query": None,
    }


def _debezium(at: Change, kind: Kind) -> bytes:
    if kind == "truncate":
        doc: dict[str, Any] = {
            "before": None,
            "after": None,
            "source": _debezium_source(at),
            "op": "t",
            "ts_ms": at.ts_ms + 350,
            "transaction": None,
        }
    else:  # the schema-change event the MySQL connector writes for a DDL
        doc = {
            "source": _debezium_source(at),
            "ts_ms": at.ts_ms + 350,
            "databaseName": at.database,
            "schemaName": None,
            "ddl": sql(kind, at.table),
            "tableChanges": [
                {
                    "type": "ALTER",
                    "id": f'"{at.database}"."{at.table}"',
                    "table": {"defaultCharsetName": "utf8mb4", "primaryKeyColumnNames": PRIMARY_KEY, "columns": []},
                }
            ],
        }
    return orjson.dumps(doc)


_RENDERERS: Final[dict[str, Callable[[Change, Kind], bytes | None]]] = {
    "canal-json": _canal_json,
    "ckafka-v1": _ckafka,
    "drs-json": _drs_json,
    "drs-json-c": _drs_json,
    "drs-avro": _drs_avro,
    "maxwell-json": _maxwell,
    "ogg-json": _ogg,
    "oms-default": _oms_default,
    "oms-extend-column-type": _oms_default,
    "oms-dataworks": _oms_dataworks,
    "oms-shareplex": _oms_shareplex,
    "oms-avro": _oms_avro,
    "debezium-json": _debezium,
}


def render(format_id: str, kind: Kind, at: Change) -> bytes | None:
    """The message of ``kind`` for ``at``'s table and position in ``format_id``; None if the format has none."""
    fn = _RENDERERS.get(format_id)
    return None if fn is None else fn(at, kind)
