"""Vendor renderers: a generated ``Change`` written as one message of a vendor format.

Each renderer is ``render(change: Change, ctx: RenderContext) -> bytes``,
registered in ``RENDERERS`` (format id -> ``module:function``, imported lazily).
A renderer writes what that vendor would write for the change: its envelope,
its value renderings (Canal strings, DRS byte lists, OMS base64, Debezium
Connect types...), its positions. Parsing the bytes with binlake's parser of
the same format must give an event that ``shared.generate.compare.check_event``
accepts, with the comparison flags in ``COMPARE``.

Vendors that pack several changes into one message have a batch renderer too,
``render_batches(changes, ctx) -> [(Kafka key, bytes)]`` in ``BATCH_RENDERERS``:
``binlake generate --ties`` uses it (Canal's multi-row flat messages, batches of
messages sharing one ``id``).
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final

from binlake.shared.errors import ConfigError
from binlake.shared.generate.workload import Change
from binlake.shared.lazy import load


@dataclass(slots=True, frozen=True)
class RenderContext:
    zone: dt.tzinfo = dt.UTC
    """The source time zone: wall-clock TIMESTAMP renderings use it."""
    options: dict[str, Any] = field(default_factory=dict)


RenderFn = Callable[[Change, RenderContext], bytes]
BatchRenderFn = Callable[[Sequence[Change], RenderContext], list[tuple[bytes, bytes]]]

RENDERERS: Final[dict[str, str]] = {
    "canal-json": "binlake.shared.generate.render.canal_family:render_canal_json",
    "kafkariver-canal": "binlake.shared.generate.render.canal_family:render_kafkariver",
    "ckafka-v1": "binlake.shared.generate.render.canal_family:render_ckafka",
    "drs-json": "binlake.shared.generate.render.canal_family:render_drs_json",
    "drs-json-c": "binlake.shared.generate.render.canal_family:render_drs_json_c",
    "drs-avro": "binlake.shared.generate.render.canal_family:render_drs_avro",
    "maxwell-json": "binlake.shared.generate.render.canal_family:render_maxwell",
    "ogg-json": "binlake.shared.generate.render.canal_family:render_ogg",
    "oms-default": "binlake.shared.generate.render.oms_family:render_oms_default",
    "oms-extend-column-type": "binlake.shared.generate.render.oms_family:render_oms_extend",
    "oms-dataworks": "binlake.shared.generate.render.oms_family:render_oms_dataworks",
    "oms-shareplex": "binlake.shared.generate.render.oms_family:render_oms_shareplex",
    "oms-avro": "binlake.shared.generate.render.oms_family:render_oms_avro",
    "debezium-json": "binlake.shared.generate.render.oms_family:render_debezium",
    "debezium-smt": "binlake.shared.generate.render.oms_family:render_debezium_smt",
}


BATCH_RENDERERS: Final[dict[str, str]] = {
    "canal-json": "binlake.shared.generate.render.canal_family:render_canal_json_batches",
}


@dataclass(slots=True, frozen=True)
class CompareFlags:
    partial_before: bool = False
    partial_after: bool = False
    upsert: bool = False
    old_null_as_empty: bool = False


COMPARE: Final[dict[str, CompareFlags]] = {
    "debezium-smt": CompareFlags(upsert=True),
    # KafkaRiverCanal writes an old NULL as origin_val "": unreadable for numbers
    # and dates (left unknown), read as empty text for strings.
    "kafkariver-canal": CompareFlags(partial_before=True, old_null_as_empty=True),
}
"""Comparison flags where a vendor's images are partial or its ops ambiguous."""


@cache
def get(format_id: str) -> RenderFn:
    target = RENDERERS.get(format_id)
    if target is None:
        raise ConfigError(f"no renderer for format {format_id!r}; renderable: {', '.join(sorted(RENDERERS))}")
    fn: RenderFn = load(target)
    return fn


def get_batches(format_id: str) -> BatchRenderFn | None:
    """The batch renderer of ``format_id``, or None where the vendor sends one change per message."""
    target = BATCH_RENDERERS.get(format_id)
    if target is None:
        return None
    fn: BatchRenderFn = load(target)
    return fn


def flags(format_id: str) -> CompareFlags:
    return COMPARE.get(format_id, CompareFlags())


def parse_options(format_id: str) -> dict[str, Any]:
    """What a normalizer of ``format_id`` needs to read rendered messages (e.g. the drs-avro schema)."""
    module_name = RENDERERS[format_id].partition(":")[0]
    hook = getattr(importlib.import_module(module_name), "parse_options", None)
    return {} if hook is None else dict(hook(format_id))
