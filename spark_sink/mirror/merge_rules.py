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
