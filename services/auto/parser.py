"""``auto``: per-message format detection.

A topic that mixes formats (or a user who does not know which one a vendor
sends) can use ``auto``: each message is classified by the fields it carries and
handed to that format's parser, whose id then appears in ``source.format``.
The rules, first match wins:

=====================================================  ======================
message carries                                        format
=====================================================  ======================
not JSON                                               oms-avro (DTS Record)
``__deleted`` (top level or in ``payload``)            debezium-smt
``BINLOG_NAME`` / ``NEW_VALUES`` / ``OLD_VALUES``      ckafka-v1
``binlog`` + ``columns`` + ``event``                   kafkariver-canal
``allMetaData`` (+ ``__light_type`` in an image)       oms-default (oms-extend-column-type)
``version`` "2.0" + ``payload``                        oms-dataworks
``meta`` object with ``op``                            oms-shareplex
``payload``, ``op`` + ``source``, or a schema change   debezium-json
(``ddl`` + ``databaseName``)
``op_type`` + ``table``                                ogg-json
``isDdl``, or ``type`` + ``data`` array                canal-json; drs-json when it has DRS-only
                                                       fields (``opType``, ``columnType``,
                                                       ``dbType``), a DELETE row in ``old``, or
                                                       ``id`` and an unsized type in ``mysqlType``
``type`` + ``database`` + ``ts`` (+ object ``data``)   maxwell-json
=====================================================  ======================

How DRS JSON differs from Canal: both carry the same fields, but DRS writes
``mysqlType`` without sizes (``varchar``, ``decimal``) where Canal writes the
declared type (``varchar(64)``, ``decimal(38,10)``: MySQL always gives these a
size). OceanBase OMS's Canal serialization writes unsized types too, but has
no ``id``. So an ``id`` with a ``char``, ``varchar``, ``binary``,
``varbinary`` or ``decimal`` type bare means DRS JSON, whose binary values
are byte lists (``[106, 103]``) that the Canal parser would keep as text.

Limits: a DRS JSON row event of a table with none of those column types (and
no DRS-only field) is read as Canal: configure ``drs-json`` for such a topic.
A debezium-smt row without ``__deleted`` is just columns, so it is not
recognised (enable the SMT's ``delete.handling.mode=rewrite``, or configure the
format). DRS JSON-C differs from Canal only in value renderings, and drs-avro
needs its schema, so neither is detected: configure them explicitly. The
document decoded for detection goes on to the detected parser; a format that
writes values as JSON numbers (Maxwell, GoldenGate, OMS) decodes once more,
exactly.

Options: auto takes the options of the formats it detects and hands them all
to each detected parser, which reads its own. Each message is keyed as its
detected format keys it under those options: option ``order`` puts the
maxwell-json messages in the Kafka order (``kafka``, also maxwell-json's
default) or binlog positions (``position``), and the debezium-json messages
in their connector's log position (``position``, debezium-json's default) or
the Kafka order (``kafka``); the other formats have one key space each. A
format's space is therefore fixed for the run, whichever messages arrive.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.services.debezium_json import envelope
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import MALFORMED, WRONG_FORMAT, RejectError
from binlake.shared.parsing.jsondoc import decode_fast, hand_over
from binlake.shared.parsing.result import Parsed

FORMAT_ID: Final = "auto"
SIZED_TYPES: Final = frozenset({"char", "varchar", "binary", "varbinary", "decimal"})
"""Types MySQL always declares with a size: Canal's ``mysqlType`` carries it, DRS JSON's does not."""
PARSER_VERSION: Final = "1"


def detect(doc: Any) -> str:
    """The format id for a decoded JSON message; raises RejectError if none fits."""
    if doc is None:
        return "debezium-json"  # a Kafka tombstone rendered as JSON null
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "not a JSON object: no vendor format sends this")
    payload = doc.get("payload")
    if "__deleted" in doc or (isinstance(payload, dict) and "__deleted" in payload):
        return "debezium-smt"
    if "BINLOG_NAME" in doc or "NEW_VALUES" in doc or "OLD_VALUES" in doc:
        return "ckafka-v1"
    if "binlog" in doc and "columns" in doc and "event" in doc:
        return "kafkariver-canal"
    if "allMetaData" in doc:
        images = (doc.get("prevStruct"), doc.get("postStruct"))
        if any(isinstance(image, dict) and "__light_type" in image for image in images):
            return "oms-extend-column-type"
        return "oms-default"
    if doc.get("version") == "2.0" and "payload" in doc:
        return "oms-dataworks"
    meta = doc.get("meta")
    if isinstance(meta, dict) and "op" in meta:
        return "oms-shareplex"
    if "payload" in doc or ("op" in doc and "source" in doc) or ("ddl" in doc and "databaseName" in doc):
        return "debezium-json"
    if "op_type" in doc and "table" in doc:
        return "ogg-json"
    if "isDdl" in doc or ("type" in doc and isinstance(doc.get("data"), list)):
        if "opType" in doc or "columnType" in doc or "dbType" in doc:
            return "drs-json"
        if doc.get("type") == "DELETE" and not doc.get("data") and doc.get("old"):
            return "drs-json"
        if "id" in doc and _unsized(doc.get("mysqlType")):
            return "drs-json"
        return "canal-json"
    if "type" in doc and "database" in doc and "ts" in doc:
        return "maxwell-json"
    raise RejectError(WRONG_FORMAT, f"no known vendor format has this set of fields: {sorted(doc)[:12]}")


def _unsized(types: Any) -> bool:
    """Whether a ``mysqlType`` object names a sized type without its size (DRS JSON's way)."""
    return isinstance(types, dict) and any(isinstance(name, str) and name in SIZED_TYPES for name in types.values())


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    stripped = raw.lstrip()
    if not stripped.startswith((b"{", b"[", b"null")):
        try:
            return registry.get("oms-avro").parse(raw, ctx)
        except RejectError as exc:
            raise RejectError(MALFORMED, f"neither JSON nor a DTS Avro record ({exc.reason})") from exc
    # A Debezium envelope whose schema a Debezium parser has read before is decoded without that schema
    # (the schema object read from the same bytes, beside the payload decoded alone: the same document).
    doc: Any = envelope.fast_document(raw)
    if doc is None:
        doc = decode_fast(raw)
    format_id = detect(doc)  # reads the document, never changes it: the parser may have it
    hand_over(raw, doc)
    try:
        return registry.get(format_id).parse(raw, ctx)
    finally:
        hand_over(None)
