"""The sink's sequence (``spark_sink.events.order``): string order is the order of (order_key, origin)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.spark_sink.events.order import order_key_of, sequence_of

pytestmark = pytest.mark.unit

_KEYS = st.builds(
    lambda a, b, r: f"{a:020d}.{b:020d}.{r:06d}",
    st.integers(0, 10**20 - 1),
    st.integers(0, 10**20 - 1),
    st.integers(0, 999_999),
)
_TOPICS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=20)
_EVENTS = st.tuples(_KEYS, _TOPICS, st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1), st.integers(0, 999_999))


@given(_EVENTS, _EVENTS)
def test_string_order_is_tuple_order(a: tuple[str, str, int, int, int], b: tuple[str, str, int, int, int]) -> None:
    sa, sb = sequence_of(*a), sequence_of(*b)
    assert (sa < sb) == (a < b)
    assert (sa == sb) == (a == b)
    assert order_key_of(sa) == a[0]


@given(_EVENTS)
def test_a_bare_order_key_of_an_earlier_release_sorts_just_below_its_sequences(
    a: tuple[str, str, int, int, int],
) -> None:
    key = a[0]
    assert key < sequence_of(*a)
    bumped = key[:-1] + str((int(key[-1]) + 1) % 10)
    if bumped > key:
        assert sequence_of(*a) < bumped
