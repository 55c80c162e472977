"""``binlake lake show`` without Spark: the native reader on a small lake written with delta-rs.

The lake is made here with the ``deltalake`` package (no JVM): a changelog
partitioned by ``source_table`` with the envelope columns show reads, a
mirror with the sink's table properties, a history table. The integration
test ``test_lake_cli`` runs the same reader on a lake the real sink wrote
(with Delta's typeWidening feature, which delta-rs cannot scan and DuckDB can).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from arro3.core import Array, DataType, Table
from deltalake import DeltaTable, write_deltalake

from binlake.spark_sink import layout
from binlake.spark_sink.lake import cli, show
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.settings import SinkSettings

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, columns: dict[str, tuple[list[Any], DataType]], *, partition_by: list[str] | None = None,
           properties: dict[str, str] | None = None) -> None:  # fmt: skip
    table = Table.from_pydict({name: Array(values, type=kind) for name, (values, kind) in columns.items()})
    write_deltalake(str(path), table, partition_by=partition_by)
    if properties:
        DeltaTable(str(path)).alter.set_table_properties(properties, raise_if_not_exists=False)


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    root = tmp_path / "lake"
    ok = "00000000000000000001.00000000000000000007.000000"
    newest = "00000000000000000001.00000000000000000009.000000"
    _write(
        root / "changelog",
        {
            "source_table": (["shop.orders", "shop.orders", "shop.orders", "shop.users"], DataType.string()),
            "op": (["INSERT", "UPDATE", "TRUNCATE", "INSERT"], DataType.string()),
            "ts_ms": ([1_000, 2_000, 3_000, 4_000], DataType.int64()),
            "order_key": ([ok, newest, "99999999999999999999.0.0", ok], DataType.string()),
        },
        partition_by=["source_table"],
    )
    sequence = f"{newest}#topic#0000000001#00000000000000000004#0000000000"
    _write(
        root / "mirror" / "shop.orders",
        {
            "id": ([1, 2], DataType.int64()),
            "name": (["a", None], DataType.string()),
            "name__bigint": ([None, 7], DataType.int64()),
            "_binlake_order_key": ([sequence.replace("9.0", "7.0"), sequence], DataType.string()),
            "_binlake_op": (["INSERT", "UPDATE"], DataType.string()),
        },
        properties={
            "binlake.source_table": "shop.orders",
            "binlake.primary_key": '["id"]',
            "binlake.fallbacks": '{"name__bigint": "name"}',
            "binlake.truncated_at": "99999999999999999999.0.0#t#0#0#0",
        },
    )
    _write(
        root / "history" / "shop.orders",
        {"id": ([1, 1, 2], DataType.int64()), "is_current": ([False, True, True], DataType.bool())},
        properties={"binlake.source_table": "shop.orders"},
    )
    (root / "mirror" / "not-a-table").mkdir()  # a folder Delta never committed to
    # A creation killed before its first commit (seen in make chaos): a log folder without a commit, a data
    # file. delta-rs refuses it ("No files in log segment"); the sink's next batch creates the table anew.
    killed = root / "mirror" / "shop.killed"
    (killed / "_delta_log" / "_staged_commits").mkdir(parents=True)
    (killed / "part-00000-orphan.snappy.parquet").write_bytes(b"PAR1")
    return root


def _settings(root: Path | str) -> SinkSettings:
    return SinkSettings(lake_uri=str(root))


def test_the_sink_writes_where_the_layout_says() -> None:
    """The settings place every table in the folder ``spark_sink.layout`` names, which the native reader reads."""
    from binlake.spark_sink.mirror import tombstones

    settings = SinkSettings(lake_uri="file:///lake/")
    assert settings.changelog_uri() == f"file:///lake/{layout.CHANGELOG_DIR}"
    assert settings.quarantine_uri() == f"file:///lake/{layout.QUARANTINE_DIR}"
    assert settings.tombstones_uri() == f"file:///lake/{layout.DELETED_KEYS_DIR}"
    name = layout.table_dir("shop.odd name")
    assert name == "shop.odd_name"
    assert settings.mirror_uri("shop.odd name") == f"file:///lake/{layout.MIRROR_DIR}/{name}"
    assert settings.history_uri("shop.odd name") == f"file:///lake/{layout.HISTORY_DIR}/{name}"
    assert settings.legacy_tombstones_uri("shop.odd name") == f"file:///lake/{layout.TOMBSTONES_DIR}/{name}"
    assert (tombstones.TABLE, tombstones.KEY) == (layout.TOMBSTONE_TABLE, layout.TOMBSTONE_KEY)


def test_listing_reads_every_table_and_the_changelog(lake: Path) -> None:
    reader = LakeReader(_settings(lake))
    try:
        listing = show.listing(reader)
    finally:
        reader.close()
    rows = {(t.kind, t.name): (t.rows, t.version) for t in listing.tables}
    assert rows == {
        ("changelog", "changelog"): (4, 0),
        ("mirror", "shop.orders"): (2, 1),  # version 1: the properties' commit
        ("history", "shop.orders"): (3, 1),
    }
    sources = {s.source_table: s for s in listing.sources}
    assert sources["shop.orders"].events == 3
    assert sources["shop.orders"].ops == {"INSERT": 1, "UPDATE": 1, "TRUNCATE": 1}
    # The newest order_key of row events only: the TRUNCATE's larger key is not one.
    assert sources["shop.orders"].last_order_key == "00000000000000000001.00000000000000000009.000000"
    assert sources["shop.orders"].last_ts_ms == 3_000
    text = show.render(listing, as_json=False)
    assert text.splitlines()[2].split() == ["TABLE", "KIND", "VERSION", "ROWS", "LAST", "COMMIT", "FRESHNESS"]
    document = json.loads(show.render(listing, as_json=True))
    assert {(t["kind"], t["name"]) for t in document["tables"]} == set(rows)


def test_detail_reads_key_fallbacks_sequence_and_history(lake: Path) -> None:
    reader = LakeReader(_settings(lake))
    try:
        detail = show.detail(reader, "shop.orders")
        with pytest.raises(LakeError, match=r"shop\.nope is neither"):
            show.detail(reader, "shop.nope")
    finally:
        reader.close()
    assert detail.key == ["id"]
    assert detail.fallbacks == {"name__bigint": "name"}
    assert detail.last_order_key is not None and detail.last_order_key.startswith(
        "00000000000000000001.00000000000000000009.000000#"
    )
    assert detail.truncated_at == "99999999999999999999.0.0#t#0#0#0"
    assert detail.history_current == 2
    roles = {c.name: (c.type, c.role) for c in detail.columns}
    assert roles["id"] == ("bigint", "key")
    assert roles["name__bigint"] == ("bigint", "fallback of name")
    assert roles["_binlake_order_key"] == ("string", "hidden")
    text = show.detail_text(detail)
    assert "  rows: 2" in text.splitlines()


def test_no_lake_and_remote_lakes_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(LakeError, match="no lake at"):
        show.listing(LakeReader(_settings(tmp_path / "nowhere")))
    with pytest.raises(LakeError, match="not on this machine's file system"):
        LakeReader(_settings("s3a://bucket/lake"))
    assert local_root("file:///data/lake") == Path("/data/lake")
    assert local_root("relative/lake") == Path("relative/lake").resolve()


def test_lake_show_command_answers_in_about_a_second_without_spark(lake: Path) -> None:
    """The real command: no JVM, no library log on the terminal, the table on stdout."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "binlake.shared.cli.main", "lake", "show", "--lake", str(lake)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "shop.orders  mirror" in done.stdout
    assert took < 10, took  # about a second alone; generous for a loaded two-core machine
    out = io.StringIO()
    assert cli.show(_settings(lake), "shop.orders", out=out) == 0
    assert out.getvalue().startswith("source table shop.orders")


def test_process_output_goes_to_the_log_for_children_started_inside(tmp_path: Path) -> None:
    """What verify does for Spark's JVM: a child started in the block writes to the log, also afterwards."""
    log = tmp_path / "jvm.log"
    script = "import sys, time; print('ivy report'); sys.stdout.flush(); time.sleep(0.3); print('later warning')"
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import subprocess, sys\n"
        "from pathlib import Path\n"
        "from binlake.spark_sink.lake.cli import process_output_to\n"
        f"with process_output_to(Path({str(log)!r})):\n"
        f"    child = subprocess.Popen([sys.executable, '-c', {script!r}])\n"
        "print('after the block')\n"
        "child.wait()\n"
    )
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout == "after the block\n"
    assert log.read_text().splitlines() == ["ivy report", "later warning"]
