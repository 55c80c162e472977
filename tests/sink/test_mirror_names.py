"""Two source tables a batch would write into one mirror stop the sink (``BINLAKE_SINK_TABLE_NAMES``).

A mirror written before names its source table, and ``mirror.schema.prepare``
refuses a second one; two tables new in the same batch are refused before
either is created (each would create the mirror with its first rows, and the
second would find it there).
"""

from __future__ import annotations

import pytest

from binlake.spark_sink.mirror.plan import one_table_per_mirror
from binlake.spark_sink.settings import SinkSettings

pytestmark = pytest.mark.unit


def _settings(**values: object) -> SinkSettings:
    return SinkSettings.model_validate({"lake_uri": "file:///lake", **values})


def test_two_tables_of_a_batch_under_one_name_are_refused() -> None:
    settings = _settings(table_names={"shop.*": "everything"})
    with pytest.raises(ValueError, match=r"shop\.items and shop\.orders both map to the mirror .*everything"):
        one_table_per_mirror(settings, ["shop.items", "shop.orders"])


def test_tables_under_names_of_their_own_pass() -> None:
    one_table_per_mirror(_settings(table_names={"shop.*": "shop_{table}"}), ["shop.items", "shop.orders"])
    one_table_per_mirror(_settings(), ["shop.items", "shop.orders", "crm.items"])
