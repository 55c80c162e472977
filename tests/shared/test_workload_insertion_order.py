"""``InsertionOrder``: the generator's O(log n) stand-in for ``list(rows)[n]`` over a table's live keys.

The workload draws a random existing row with ``rng.choice``; ``InsertionOrder.nth`` must name the same
key that indexing the dict's key list would, after any mix of inserts and deletes, so a seed keeps
generating the same traffic.
"""

from __future__ import annotations

import random

import pytest

from binlake.shared.generate.workload import InsertionOrder, Workload

pytestmark = pytest.mark.unit


def test_nth_is_the_nth_live_key_in_insertion_order() -> None:
    rng = random.Random(5)
    order, model = InsertionOrder(), list[int]()
    next_key = 0
    for _ in range(5_000):
        if model and rng.random() < 0.4:
            key = rng.choice(model)
            order.remove(key)
            model.remove(key)
        else:
            next_key += 1
            order.add(next_key)
            model.append(next_key)
        if model:
            for n in {0, len(model) - 1, rng.randrange(len(model))}:
                assert order.nth(n) == model[n]


def test_the_workload_keeps_every_live_key_in_its_order() -> None:
    workload = Workload(seed=9, tables=3)
    for _ in workload.run(3_000):
        pass
    for table, rows in workload.state.items():
        keys = list(rows)
        assert [workload._order[table].nth(n) for n in range(len(keys))] == keys


def test_a_truncated_table_draws_only_rows_inserted_after() -> None:
    workload = Workload(seed=4, tables=2)
    for _ in workload.run(500):
        pass
    workload.truncate("t00")
    assert workload.state["t00"] == {}
    for _ in workload.run(500):
        pass  # updates and deletes of t00 pick among its new rows only
    keys = list(workload.state["t00"])
    assert [workload._order["t00"].nth(n) for n in range(len(keys))] == keys
