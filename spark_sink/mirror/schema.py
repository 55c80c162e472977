"""Creating and evolving a mirror table's schema for a micro-batch (see ``plan`` for the rules).

The mirror is created on the first batch that describes its table, with the
key fixed in the table property ``binlake.primary_key``, the source table's
name in ``binlake.source_table`` and the configured partition columns
(``SinkSettings.partition_by``): by that batch's first write to it
(``NewMirror``, one commit holding the table and its first rows; a TRUNCATE in
that batch is recorded in its properties, since there is nothing to delete yet).
Later batches add columns, widen types (Delta type widening) or route a type
to a fallback column. Schema changes are not
tagged with a Delta transaction id: each is idempotent by value (adding a
column that exists, or widening to the type the column has, is skipped), so a
replayed batch makes the same decisions and changes nothing twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType, StringType, StructField, StructType

from binlake.spark_sink import delta
from binlake.spark_sink.layout import (
    COLUMN_ORDER,
    HIDDEN,
    OP,
    ORDER_KEY,
    ORIGIN,
    PROP_FALLBACKS,
    PROP_KEY,
    PROP_SOURCE,
    PROP_WIDTH,
)
from binlake.spark_sink.mirror import mirror_state
from binlake.spark_sink.mirror.plan import SHARED_NAME_HINT, Descriptor, Plan, choose_key, plan
from binlake.spark_sink.settings import SinkSettings


@dataclass(frozen=True, slots=True)
class NewMirror:
    """A mirror this batch creates with its first rows (``write``): its schema, partitions and properties."""

    uri: str
    schema: StructType
    partition_by: list[str]
    properties: dict[str, str]

    def write(self, rows: DataFrame) -> None:
        """Create it holding ``rows`` (the mirror's columns), in one commit.

        That commit records the batch's transaction id (``delta.create_as``): a batch replayed after it finds
        the mirror there, and its write under the same id is skipped as committed.
        """
        delta.create_as(rows, self.uri, self.schema, partition_by=self.partition_by, properties=self.properties)


def prepare(
    spark: SparkSession, settings: SinkSettings, table: str, descs: list[Descriptor]
) -> tuple[Plan, list[str], NewMirror | None]:
    """Evolve the mirror's schema for this batch; return the column plan, the key, and, where the mirror is
    new, the mirror its first write creates (``NewMirror.write``)."""
    uri = settings.mirror_uri(table)
    if not delta.exists(spark, uri):
        return new_mirror(settings, table, descs)
    properties = delta.properties(spark, uri)
    key, fallbacks = owned_key(settings, table, properties, descs)
    upgrade(spark, uri, features(settings), properties)
    existing = {f.name: f.dataType for f in delta.schema(spark, uri).fields}
    if key and COLUMN_ORDER not in existing:
        properties = _add_column_sequences(spark, uri, properties, existing)
        existing = {f.name: f.dataType for f in delta.schema(spark, uri).fields}
    refused: set[str] = set()
    while True:
        result = plan(existing, fallbacks, descs, widening=settings.type_widening, no_widen=frozenset(refused))
        failed = False
        for name, wider in result.widened.items():
            try:
                delta.change_type(spark, uri, name, wider)
            except AnalysisException:
                refused.add(name)  # Delta cannot widen this pair: use a fallback column instead
                failed = True
        if not failed:
            break
        existing = {f.name: f.dataType for f in delta.schema(spark, uri).fields}
    added: list[tuple[str, DataType]] = [(name, result.types[name]) for name in result.added]
    if not key and ORIGIN not in existing:
        added.append((ORIGIN, StringType()))  # a key-less mirror of an earlier release: its rows have no origin
    delta.add_columns(spark, uri, added)
    if result.fallbacks != fallbacks:
        delta.set_properties(spark, uri, {PROP_FALLBACKS: json.dumps(result.fallbacks)})
    result.legacy_width = mirror_state.legacy_width(properties, list(result.types))
    return result, key, None


def _add_column_sequences(
    spark: SparkSession, uri: str, properties: dict[str, str], existing: dict[str, DataType]
) -> dict[str, str]:
    """Give a keyed mirror of an earlier release the column sequences' columns (``mirror_state``): its rows
    keep NULL there, read as "every column has the row's sequence", with the width it has now.

    The width is recorded first: a batch replayed after the columns were added finds it there.
    """
    if PROP_WIDTH not in properties:
        width = {PROP_WIDTH: str(sum(1 for name in existing if name not in HIDDEN))}
        delta.set_properties(spark, uri, width)
        properties = {**properties, **width}
    delta.add_columns(spark, uri, [(f.name, f.dataType) for f in mirror_state.fields()])
    return properties


def features(settings: SinkSettings) -> dict[str, str]:
    """The Delta table features a new mirror or history table is created with (``deletion_vectors``)."""
    return {delta.DELETION_VECTORS: "true"} if settings.deletion_vectors else {}


def upgrade(spark: SparkSession, uri: str, wanted: dict[str, str], properties: dict[str, str]) -> None:
    """Give an existing mirror or history table (its ``properties``) the features new ones get (``wanted``:
    ``features``): one commit, once (idempotent by value, as every schema change)."""
    wanted = {name: value for name, value in wanted.items() if properties.get(name) != value}
    if wanted:
        delta.set_properties(spark, uri, wanted)


def owned_key(
    settings: SinkSettings, table: str, properties: dict[str, str], descs: list[Descriptor]
) -> tuple[list[str], dict[str, str]]:
    """An existing mirror's key and fallback columns, from its table ``properties``; an error if it belongs to
    another source table."""
    owner = properties.get(PROP_SOURCE)
    if owner is not None and owner != table:
        uri = settings.mirror_uri(table)
        raise ValueError(f"the mirror {uri} belongs to source table {owner}, not {table}: {SHARED_NAME_HINT}")
    key = choose_key(table, json.loads(properties.get(PROP_KEY, "[]")), descs, settings.primary_keys)
    fallbacks: dict[str, str] = json.loads(properties.get(PROP_FALLBACKS, "{}"))
    return key, fallbacks


def new_mirror(settings: SinkSettings, table: str, descs: list[Descriptor]) -> tuple[Plan, list[str], NewMirror]:
    """The plan, key and table of a mirror its first batch (with ``descs``) creates (``NewMirror.schema`` puts
    the key first)."""
    key = choose_key(table, None, descs, settings.primary_keys)
    result = plan({}, {}, descs, widening=settings.type_widening)
    ordered = key + [name for name in result.types if name not in key]
    # Nullable, key included: a mirror created with its first rows (a CTAS) gets no NOT NULL, so none
    # is declared here either; the sink never writes a row without its whole key.
    fields = [StructField(name, result.types[name]) for name in ordered]
    fields.append(StructField(ORDER_KEY, StringType()))
    if not key:
        fields += [StructField(OP, StringType()), StructField(ORIGIN, StringType())]
    else:
        fields += mirror_state.fields()
    result.legacy_width = len(result.types)  # no row of this mirror lacks a width
    props = {PROP_KEY: json.dumps(key), PROP_FALLBACKS: json.dumps(result.fallbacks), PROP_SOURCE: table}
    if settings.type_widening:
        props["delta.enableTypeWidening"] = "true"
    props |= features(settings)
    uri = settings.mirror_uri(table)
    return result, key, NewMirror(uri, StructType(fields), partition_columns(settings, table, result.types), props)


def planned(
    spark: SparkSession, settings: SinkSettings, table: str, descs: list[Descriptor]
) -> tuple[Plan, list[str], StructType]:
    """The plan, key and schema the mirror would have once a batch with ``descs`` is applied, without changing
    anything (current-state reads): a new mirror's, or the mirror's own with columns added and types widened.

    A widening Delta would refuse (``prepare`` then routes the type to a fallback column) shows as widened.
    """
    found = delta.state(spark, settings.mirror_uri(table))
    if found is None:
        result, key, new = new_mirror(settings, table, descs)
        return result, key, new.schema
    properties, schema = found.properties, found.schema
    key = choose_key(table, json.loads(properties.get(PROP_KEY, "[]")), descs, settings.primary_keys)
    fallbacks: dict[str, str] = json.loads(properties.get(PROP_FALLBACKS, "{}"))
    existing = {f.name: f.dataType for f in schema.fields}
    result = plan(existing, fallbacks, descs, widening=settings.type_widening)
    fields = [StructField(f.name, result.types.get(f.name, f.dataType)) for f in schema.fields]
    fields += [StructField(name, result.types[name]) for name in result.added]
    if not key and ORIGIN not in existing:
        fields.append(StructField(ORIGIN, StringType()))
    if key and COLUMN_ORDER not in existing:
        properties = {PROP_WIDTH: str(sum(1 for name in existing if name not in HIDDEN)), **properties}
        fields += mirror_state.fields()
    result.legacy_width = mirror_state.legacy_width(properties, list(result.types))
    return result, key, StructType(fields)


def partition_columns(settings: SinkSettings, table: str, types: dict[str, DataType]) -> list[str]:
    """The configured partition columns of a new mirror or history table; an error if it has no such column."""
    wanted = settings.mirror_partition_by(table)
    missing = [name for name in wanted if name not in types]
    if missing:
        raise ValueError(
            f"{table}: partition columns {missing} (BINLAKE_SINK_PARTITION_BY) are not among its columns "
            f"{sorted(types)}; name columns its events carry"
        )
    return wanted


def follow(
    spark: SparkSession,
    uri: str,
    columns: dict[str, DataType],
    *,
    properties: dict[str, str],
    partition_by: list[str] | None = None,
) -> None:
    """Make a companion table (history) hold ``columns`` with the mirror's types; create it with ``properties``
    (and ``partition_by``).

    Its own columns (not in ``columns``) are left alone. A type the mirror widened is widened here too;
    Delta accepted that widening for the mirror, so it accepts it for the same column here.
    """
    if not delta.exists(spark, uri):
        delta.create(
            spark,
            uri,
            StructType([StructField(n, t) for n, t in columns.items()]),
            partition_by=partition_by,
            properties=properties,
        )
        return
    existing = {f.name: f.dataType for f in delta.schema(spark, uri).fields}
    for name, wanted in columns.items():
        if name in existing and existing[name] != wanted:
            delta.change_type(spark, uri, name, wanted)
    delta.add_columns(spark, uri, [(n, t) for n, t in columns.items() if n not in existing])
