"""``binlake generate --ties``: traffic that ties or inverts naive order keys, and still folds to the truth.

Issue 16: Canal gives every flat message of a batch one ``id``, ``es`` has one-second
resolution, and event times are not monotonic across transactions. The ties mode
must really produce those patterns, and normalizing its messages, then folding each
row's events by ``order_key`` (ties in input order), must give the source's final state.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections import defaultdict
from typing import Any, Final

import pytest

from binlake.shared.cli.generate import messages, truth_document
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import Image
from binlake.shared.generate import render
from binlake.shared.generate.compare import equivalent
from binlake.shared.generate.workload import Change, Workload
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.result import Parsed

pytestmark = pytest.mark.unit

EVENTS: Final = 1500
SEEDS: Final = (1, 7, 2024)


def _changes(seed: int) -> list[Change]:
    return list(Workload(seed=seed, tables=3, ties=True).run(EVENTS))


@pytest.mark.parametrize("seed", SEEDS)
def test_ties_change_a_row_again_within_one_second(seed: int) -> None:
    by_row: dict[tuple[str, Any], list[Change]] = defaultdict(list)
    for change in _changes(seed):
        by_row[(change.table, change.key)].append(change)
    same_second = sum(1 for changes in by_row.values() for a, b in itertools.pairwise(changes) if a.ts_ms == b.ts_ms)
    assert same_second >= 100, same_second


@pytest.mark.parametrize("seed", SEEDS)
def test_ties_event_times_go_back_while_positions_go_forward(seed: int) -> None:
    changes = _changes(seed)
    back = sum(1 for a, b in itertools.pairwise(changes) if b.ts_ms < a.ts_ms)
    assert back >= 20, back
    positions = [(int(c.binlog_file.rsplit(".", 1)[1]), c.binlog_pos) for c in changes]
    assert positions == sorted(positions)  # commit order is still the binlog's
    assert [c.sequence for c in changes] == list(range(1, EVENTS + 1))


def _canal(seed: int) -> list[dict[str, Any]]:
    items = messages("canal-json", Workload(seed=seed, tables=3, ties=True), EVENTS, "UTC")
    for key, raw in items:
        doc = json.loads(raw)
        assert key == f"{doc['database']}.{doc['table']}".encode()  # a table's messages in one partition
    return [json.loads(raw) for _, raw in items]


@pytest.mark.parametrize("seed", SEEDS)
def test_canal_batches_share_an_id_and_change_a_multi_row_message_row_again(seed: int) -> None:
    docs = _canal(seed)
    assert sum(len(d["data"]) for d in docs) == EVENTS
    by_id: dict[int, list[int]] = defaultdict(list)
    for index, doc in enumerate(docs):
        by_id[doc["id"]].append(index)
    assert all(len(indexes) > 1 for indexes in list(by_id.values())[:-1])  # every full batch: several messages
    again = 0  # rows at index >= 2 of a message changed again by a later message of its batch
    for indexes in by_id.values():
        for position, index in enumerate(indexes):
            late_rows = {row["id"] for row in docs[index]["data"][2:]}
            later = {row["id"] for i in indexes[position + 1 :] for row in docs[i]["data"]}
            again += len(late_rows & later)
    assert again >= 20, again


@pytest.mark.parametrize("seed", SEEDS)
def test_canal_ties_break_the_old_es_id_row_key(seed: int) -> None:
    # The key before issue 16 was (es, id, row): on this traffic it ties or inverts a row's changes.
    by_row: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
    for doc in _canal(seed):
        for row_index, row in enumerate(doc["data"]):
            by_row[(doc["table"], row["id"])].append((doc["es"], doc["id"], row_index))
    wrong = sum(1 for keys in by_row.values() for a, b in itertools.pairwise(keys) if not a < b)
    assert wrong >= 50, wrong


def _fold(events: list[ChangeEvent]) -> dict[str, dict[str, Image]]:
    """Each row's last state: its events sorted by order_key (stable: ties stay in input order)."""
    by_row: dict[tuple[str, str], list[ChangeEvent]] = defaultdict(list)
    for event in events:
        image = event.after if event.after is not None else event.before
        assert image is not None
        by_row[(f"{event.source.database}.{event.source.table}", str(image["id"]))].append(event)
    state: dict[str, dict[str, Image]] = defaultdict(dict)
    for (table, key), row_events in by_row.items():
        for event in sorted(row_events, key=lambda e: e.order_key):
            if event.op == "DELETE":
                state[table].pop(key, None)
            else:
                assert event.after is not None
                state[table][key] = {**state[table].get(key, {}), **event.after}
    return state


def _normalize(fmt: str, items: list[tuple[bytes, bytes]], source_zone: dt.tzinfo) -> list[ChangeEvent]:
    options = render.parse_options(fmt)
    ctx = ParseContext(
        source_table=options.get("source_table"), source_timezone=source_zone, options=options.get("options", {})
    )
    parser = registry.get(fmt)
    events: list[ChangeEvent] = []
    for offset, (_, raw) in enumerate(items):
        outcome = parser(raw, ctx.at(fmt, 0, offset))
        assert isinstance(outcome, Parsed), f"{fmt} message {offset} rejected: {outcome}"
        events.extend(outcome.events)
    return events


@pytest.mark.parametrize("fmt", sorted(render.RENDERERS))
def test_normalized_ties_fold_to_the_truth(fmt: str) -> None:
    tz_name = "Asia/Shanghai"
    workload = Workload(seed=11, tables=3, ties=True)
    items = messages(fmt, workload, EVENTS, tz_name)
    folded = _fold(_normalize(fmt, items, zone(tz_name)))
    for table, rows in workload.state.items():
        name = f"{workload.database}.{table}"
        got = folded.get(name, {})
        assert sorted(got) == sorted(str(key) for key in rows), f"{fmt} {name}: live keys differ"
        for key, row in rows.items():
            state = got[str(key)]
            wrong = [c for c, v in row.items() if c not in state or not equivalent(v, state[c], zone(tz_name))]
            assert not wrong, f"{fmt} {name} row {key}: columns {wrong} differ from the truth"
    document = truth_document(fmt, workload, tz_name)
    assert document["ties"] is True and len(document["changes"]) == EVENTS
