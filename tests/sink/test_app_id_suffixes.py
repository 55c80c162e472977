"""Every extra commit a mirror batch makes under a suffixed app id is known to the lake's ownership check."""

from __future__ import annotations

import pytest

from binlake.spark_sink.checkpoint import app_ids
from binlake.spark_sink.mirror import apply, batch

pytestmark = pytest.mark.unit


def test_every_suffix_the_mirror_commits_under_is_known() -> None:
    # A suffix missing from app_ids.SUFFIXES would make the sink's own compaction commit look like another
    # sink's app id, and a restart under the same checkpoint would refuse the lake.
    assert set(app_ids.SUFFIXES) == {apply.TRUNCATE_APP, apply.COMPACT_APP, batch.FLUSH_APP}
    assert app_ids.base_id("abc" + apply.COMPACT_APP) == app_ids.base_id("abc" + apply.TRUNCATE_APP) == "abc"
    # A flush of deferred tails runs a batch's steps under its own suffix, theirs after it.
    assert app_ids.base_id("abc" + batch.FLUSH_APP + apply.COMPACT_APP) == app_ids.base_id("abc.flush") == "abc"
