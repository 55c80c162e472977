"""``binlake normalize`` end to end, as a user runs it (a real subprocess)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.shared.codec import avro
from tests.corpus_cases import CORPUS

pytestmark = pytest.mark.unit


def _run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "binlake.shared.cli.main", *args],
        input=stdin,
        capture_output=True,
        check=False,
        timeout=60,
    )


def _one_line(path: Path) -> bytes:
    return json.dumps(json.loads(path.read_bytes())).encode()


def test_good_and_bad_lines(tmp_path: Path) -> None:
    folder = CORPUS / "canal-json"
    lines = [
        _one_line(folder / "seed002-insert.in.json"),
        b"{not json",
        b"",
        _one_line(folder / "edge-multirow-update-partial-old.in.json"),
        b"\xff\xfe invalid utf-8",
    ]
    source = tmp_path / "canal.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    dlq = tmp_path / "dlq.jsonl"
    result = _run("normalize", "--format", "canal-json", "--dlq", str(dlq), str(source))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["op"] for e in events] == ["INSERT", "UPDATE", "UPDATE"]
    assert [(e["origin"]["offset"], e["origin"]["row"]) for e in events] == [(1, 0), (4, 0), (4, 1)]
    assert {e["origin"]["topic"] for e in events} == {"canal.jsonl"}
    dead = [json.loads(line) for line in dlq.read_text().splitlines()]
    assert [d["line"] for d in dead] == [2, 5]
    assert all(d["code"] == "malformed" and d["format"] == "canal-json" for d in dead)
    assert base64.b64decode(dead[1]["raw_base64"]) == lines[4]
    summary = json.loads(result.stderr.decode().split("normalize: ", 1)[1])
    assert summary == {"messages": 4, "events": 3, "rejected": 2, "control": 0, "blank_lines": 1}


def test_avro_output_and_base64_input(tmp_path: Path) -> None:
    raw = _one_line(CORPUS / "canal-json" / "seed002-delete.in.json")
    result = _run("normalize", "--format", "canal-json", "--base64", "--output", "avro", stdin=base64.b64encode(raw))
    assert result.returncode == 0, result.stderr
    event = avro.decode(base64.b64decode(result.stdout.strip()))
    assert event.op == "DELETE"
    assert event.before is not None and event.before["id"] == 17936128
    assert event.origin.topic == "stdin"


def test_rejects_go_to_stderr_without_dlq() -> None:
    result = _run("normalize", "--format", "canal-json", stdin=b"[]\n")
    assert result.returncode == 0
    assert result.stdout == b""
    dead = json.loads(result.stderr.splitlines()[0])
    assert dead["code"] == "wrong_format"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "nope"], "unknown format 'nope'"),
        (["--format", "canal-json", "--source-timezone", "Mars/Olympus"], "unknown time zone"),
        (["--format", "debezium-smt", "--source-table", "no_dot"], "expected DB.TABLE"),
    ],
)
def test_configuration_errors_say_what_to_do(args: list[str], message: str) -> None:
    result = _run("normalize", *args, stdin=b"")
    assert result.returncode == 2
    assert message in result.stderr.decode()
