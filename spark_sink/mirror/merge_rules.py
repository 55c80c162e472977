"""The mirror's MERGE rules as Spark SQL text: how a key's folded batch meets the mirror's row.

A key's folded batch (``s``: per value column ``_v<i>`` its newest known value and ``_o<i>`` that event's
sequence, ``ORDER_KEY`` the newest sequence, ``_delete`` whether the newest event deletes, ``LAST_DELETE``
the newest DELETE's sequence, ``FLOOR`` the key's tombstone) meets the mirror's row (``t``).

The rule is per column, so the result is a function of the set of events, not of where the batches were
cut: every column holds the value of the newest event that knows it, unless a DELETE (or TRUNCATE) newer
than that event emptied it; a key whose newest event is a DELETE has no row. So the mirror keeps each
column's sequence (``mirror_state``): the row's ``_binlake_order_key`` (the newest event applied), and in
``_binlake_column_order`` the columns whose sequence differs from it. A batch's column is applied when its
event is newer than the column's sequence (a matched row) or than the key's tombstone (a new row). The
merge (``merge.merge``) and the current-state read (``current_state``) both run these clauses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from binlake.spark_sink.delta import quote
from binlake.spark_sink.layout import COLUMN_ORDER, ORDER_KEY, WIDTH
from binlake.spark_sink.mirror import mirror_state

FLOOR: Final = "_floor"
"""A folded key's tombstone floor (NULL: no tombstone)."""
LAST_DELETE: Final = "_ld"
"""The folded row's newest DELETE in the batch (its sequence), NULL when the batch deletes nothing."""


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """How a mirror's row (``t``) and a key's folded batch (``s``, with its floor) combine, as SQL text: the
    clauses of the MERGE, and what a current-state read computes."""

    condition: str
    """The key columns equal."""
    deleted: str
    """A matched key's row goes: the batch's newest event is a DELETE newer than the row (else it is updated)."""
    changes: str
    """A matched row the batch may change (not deleted): a newer event, or a column older than the row."""
    inserted: str
    """An unmatched key's batch makes a row (its newest event is no DELETE, newer than its tombstone)."""
    update: dict[str, str]
    """Target column (quoted) -> its value in a matched row the batch updates."""
    insert: dict[str, str]
    """Target column (quoted) -> its value in an inserted row (columns missing here are NULL)."""


def merge_clauses(
    target_columns: list[str], *, physical: list[str], key_index: list[int], legacy_width: int
) -> MergeClauses:
    """The clauses of a folded batch's MERGE into a keyed mirror with ``target_columns`` (module doc).

    ``physical``: the mirror's physical columns in its schema's order (a batch's new ones last), as the
    fold's ``_v<i>``/``_o<i>`` number them; ``legacy_width``: the width of rows an earlier release wrote.
    """
    condition = " AND ".join(f"t.{quote(physical[i])} = s._v{i}" for i in key_index)
    row = f"t.{quote(ORDER_KEY)}"
    newest = f"greatest({row}, s.{ORDER_KEY})"
    tomb = f"coalesce(s.{FLOOR}, '')"
    width = str(len(physical))
    update: dict[str, str] = {quote(ORDER_KEY): newest, quote(WIDTH): width}
    insert: dict[str, str] = {quote(ORDER_KEY): f"s.{ORDER_KEY}", quote(WIDTH): width}
    updated_order: list[tuple[str, str]] = []
    inserted_order: list[tuple[str, str]] = []
    targets = set(target_columns)
    for i, name in enumerate(physical):
        if i in key_index:
            insert[quote(name)] = f"s._v{i}"
            continue
        if name not in targets:
            continue
        known = mirror_state.column_sequence("t", name, i, legacy_width=legacy_width)
        live = f"(s.{LAST_DELETE} IS NULL OR s._o{i} > s.{LAST_DELETE})"
        takes = f"s._o{i} > {known} AND {live}"
        emptied = f"s.{LAST_DELETE} > {known}"
        update[quote(name)] = f"CASE WHEN {takes} THEN s._v{i} WHEN {emptied} THEN NULL ELSE t.{quote(name)} END"
        updated_order.append(
            (name, f"CASE WHEN {takes} THEN s._o{i} WHEN {emptied} THEN s.{LAST_DELETE} ELSE {known} END")
        )
        takes_new = f"s._o{i} > {tomb} AND {live}"
        insert[quote(name)] = f"CASE WHEN {takes_new} THEN s._v{i} END"
        emptied_new = f"s.{LAST_DELETE} > {tomb}"
        inserted_order.append(
            (name, f"CASE WHEN {takes_new} THEN s._o{i} WHEN {emptied_new} THEN s.{LAST_DELETE} ELSE {tomb} END")
        )
    update[quote(COLUMN_ORDER)] = mirror_state.order_map(updated_order, newest)
    insert[quote(COLUMN_ORDER)] = mirror_state.order_map(inserted_order, f"s.{ORDER_KEY}")
    return MergeClauses(
        condition=condition,
        deleted=f"s._delete AND {row} < s.{ORDER_KEY}",
        # A row whose columns all carry its own sequence changes only with a newer event (one older than the
        # row is older than every column, and so is an older DELETE).
        changes=(
            f"{row} < s.{ORDER_KEY} OR cardinality(coalesce(t.{quote(COLUMN_ORDER)}, {mirror_state.EMPTY_ORDER})) > 0"
            f" OR coalesce(t.{quote(WIDTH)}, {legacy_width}) < {width}"
        ),
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
    columns: list[tuple[str, str]], *, physical: list[str], key_index: list[int], legacy_width: int
) -> MergedRead:
    """The MERGE of a folded batch into a mirror whose columns are ``columns`` ((name, SQL type text) in order)
    as a query (``MergedRead``): the same clauses, so Spark's current-state read agrees with the MERGE."""
    clauses = merge_clauses(
        [name for name, _ in columns], physical=physical, key_index=key_index, legacy_width=legacy_width
    )
    in_mirror = f"t.{quote(physical[key_index[0]])} IS NOT NULL"  # a mirror row never lacks its key
    in_batch = f"s._v{key_index[0]} IS NOT NULL"
    keep = (
        f"CASE WHEN NOT ({in_batch}) THEN true WHEN NOT ({in_mirror}) THEN {clauses.inserted}"
        f" ELSE NOT ({clauses.deleted}) END"
    )
    selected: list[str] = []
    for name, type_text in columns:
        quoted = quote(name)
        own = f"t.{quoted}"
        updated = clauses.update.get(quoted, own)
        inserted = clauses.insert.get(quoted, "NULL")
        value = f"CASE WHEN NOT ({in_batch}) THEN {own} WHEN NOT ({in_mirror}) THEN {inserted} ELSE {updated} END"
        selected.append(f"CAST({value} AS {type_text}) AS {quoted}")
    return MergedRead(condition=clauses.condition, keep=keep, columns=selected)
