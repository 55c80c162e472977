"""The mirror's MERGE rules as SQL text, for Spark's MERGE and delta-rs's alike (no Spark here).

A key's folded batch (``s``: per value column ``_v<i>`` its newest known value and ``_o<i>`` that event's
sequence, ``ORDER_KEY`` the newest sequence, ``_delete`` whether the newest event deletes, ``LAST_DELETE``
the newest DELETE's sequence, ``FLOOR`` the key's tombstone) meets the mirror's row (``t``): each column
is applied above the key's *floor* (the mirror row's sequence, or the tombstone's for a key the mirror does
not hold), so an old event never overwrites newer state and never resurrects a deleted row. Spark's
mirror (``merge.merge``, ``current_state``) and the mirror without Spark (``delta_rs_mirror``) both run
these clauses; only the quoting of a column name differs (backticks for Spark, double quotes for
DataFusion, which folds unquoted names to lower case).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from binlake.spark_sink.layout import ORDER_KEY

FLOOR: Final = "_floor"
"""A folded key's tombstone floor (NULL: no tombstone)."""
LAST_DELETE: Final = "_ld"
"""The folded row's newest DELETE in the batch (its sequence), NULL when the batch deletes nothing."""


def backticks(name: str) -> str:
    """A Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def double_quotes(name: str) -> str:
    """A DataFusion (delta-rs) SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """How a mirror's row (``t``) and a key's folded batch (``s``, with its floor) combine, as SQL text: the
    clauses of the MERGE, and what a current-state read computes."""

    condition: str
    """The key columns equal."""
    newer: str
    """A matched key's batch is newer than its mirror row (else the row stays as it is)."""
    inserted: str
    """An unmatched key's batch makes a row (its newest event is no DELETE, newer than its tombstone)."""
    update: dict[str, str]
    """Target column (quoted) -> its value in a matched row the batch updates (deleted when ``s._delete``)."""
    insert: dict[str, str]
    """Target column (quoted) -> its value in an inserted row (columns missing here are NULL)."""


def merge_clauses(
    target_columns: list[str],
    *,
    physical: list[str],
    key_index: list[int],
    quote: Callable[[str], str] = backticks,
) -> MergeClauses:
    """The clauses of a folded batch's MERGE into a mirror with ``target_columns`` (module doc)."""
    condition = " AND ".join(f"t.{quote(physical[i])} = s._v{i}" for i in key_index)
    floor = f"coalesce(t.{quote(ORDER_KEY)}, '')"
    reset = f"s.{LAST_DELETE} > {floor}"
    tomb = f"coalesce(s.{FLOOR}, '')"
    index = {phys: i for i, phys in enumerate(physical)}
    update: dict[str, str] = {quote(ORDER_KEY): f"s.{ORDER_KEY}"}
    insert: dict[str, str] = {quote(ORDER_KEY): f"s.{ORDER_KEY}"}
    for name in target_columns:
        if name == ORDER_KEY or name not in index:
            if name != ORDER_KEY:
                update[quote(name)] = f"CASE WHEN {reset} THEN NULL ELSE t.{quote(name)} END"
            continue
        i = index[name]
        if i in key_index:
            insert[quote(name)] = f"s._v{i}"
            continue
        live = f"(s.{LAST_DELETE} IS NULL OR s._o{i} > s.{LAST_DELETE})"
        update[quote(name)] = (
            f"CASE WHEN s._o{i} > {floor} AND {live} THEN s._v{i} WHEN {reset} THEN NULL ELSE t.{quote(name)} END"
        )
        insert[quote(name)] = f"CASE WHEN s._o{i} > {tomb} AND {live} THEN s._v{i} END"
    return MergeClauses(
        condition=condition,
        newer=f"{floor} < s.{ORDER_KEY}",
        inserted=f"NOT s._delete AND {tomb} < s.{ORDER_KEY}",
        update=update,
        insert=insert,
    )


@dataclass(frozen=True, slots=True)
class MergedRead:
    """What a current-state read computes instead of running the MERGE: the mirror (``t``) full-outer-joined
    with the folded batch (``s``) on ``condition``, the joined rows where ``keep`` holds, ``columns`` selected:
    the rows the MERGE would leave in the table."""

    condition: str
    keep: str
    columns: list[str]
    """Per target column: its value after the MERGE, cast to its type and named as it."""


def merged_read(
    columns: list[tuple[str, str]],
    *,
    physical: list[str],
    key_index: list[int],
    quote: Callable[[str], str] = backticks,
) -> MergedRead:
    """The MERGE of a folded batch into a mirror whose columns are ``columns`` ((name, SQL type text) in order)
    as a query (``MergedRead``): the same clauses, so Spark's current-state read agrees with the MERGE."""
    clauses = merge_clauses([name for name, _ in columns], physical=physical, key_index=key_index, quote=quote)
    in_mirror = f"t.{quote(physical[key_index[0]])} IS NOT NULL"  # a mirror row never lacks its key
    in_batch = f"s._v{key_index[0]} IS NOT NULL"
    keep = (
        f"CASE WHEN NOT ({in_batch}) THEN true WHEN NOT ({in_mirror}) THEN {clauses.inserted}"
        f" ELSE NOT (s._delete AND {clauses.newer}) END"
    )
    selected: list[str] = []
    for name, type_text in columns:
        quoted = quote(name)
        own = f"t.{quoted}"
        updated = clauses.update.get(quoted, own)
        inserted = clauses.insert.get(quoted, "NULL")
        value = (
            f"CASE WHEN NOT ({in_batch}) THEN {own} WHEN NOT ({in_mirror}) THEN {inserted}"
            f" WHEN {clauses.newer} THEN {updated} ELSE {own} END"
        )
        selected.append(f"CAST({value} AS {type_text}) AS {quoted}")
    return MergedRead(condition=clauses.condition, keep=keep, columns=selected)
