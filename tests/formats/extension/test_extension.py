"""A format written outside binlake works through the public registry, with no native code.

``csvish`` (``tests/formats/extension/csvish``) is one folder of Python, made up for these
tests and not in the built-in ``FORMATS`` table. Registered by ``registry.register``, by
``binlake normalize --format-spec`` and by ``BINLAKE_FORMAT_SPECS``, it goes through
``codec_for``, the call the normalizer runtime makes: its golden lines become records whose
Avro values decode to the expected events, and every bad line a reject with its reason.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.shared.codec import avro, json_view
from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.shared.errors import ConfigError
from binlake.shared.event.model import ChangeEvent
from binlake.shared.kafka.records import event_key
from binlake.shared.kafka.runtime import Normalizer
from binlake.shared.normalize import Normalized, codec_for
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import REJECT_CODES, RejectError
from binlake.shared.parsing.result import Rejected
from tests.corpus_cases import Case
from tests.formats.extension.csvish import CORPUS, FORMAT_ID, TARGET, golden_cases
from tests.formats.extension.csvish import parser as csvish

pytestmark = pytest.mark.unit

CASES = golden_cases()
ROOT = Path(__file__).parents[3]

registry.register(FORMAT_ID, TARGET)  # what BINLAKE_FORMAT_SPECS='{"csvish": "...:SPEC"}' does in the normalizer


def _events(normalized: Normalized) -> list[ChangeEvent]:
    """The events the records carry, decoded from their Avro values (each record's key checked)."""
    events = []
    for key, value in normalized.pairs():
        event = avro.decode(value)
        assert key == event_key(event)
        events.append(event)
    return events


def test_the_format_is_not_built_in() -> None:
    assert FORMAT_ID not in registry.FORMATS
    assert FORMAT_ID not in registry.format_ids()  # binlake formats, docs/formats.md: the built-in ones
    spec = registry.spec(FORMAT_ID)
    assert (spec.format_id, spec.version, spec.parse) == (FORMAT_ID, "1", csvish.parse)
    codec = codec_for(FORMAT_ID, ParseContext())
    assert (codec.format_id, codec.version) == (FORMAT_ID, "1")


def test_golden_cases_have_expected_output() -> None:
    assert len(CASES) == 7
    assert {case.expected_reject() is None for case in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_case_through_the_codec(case: Case) -> None:
    codec = codec_for(FORMAT_ID, case.context())
    outcome = codec(case.raw(), "corpus", 0, 0)
    reject = case.expected_reject()
    if reject is not None:
        assert isinstance(outcome, Rejected), outcome
        assert (outcome.code, outcome.reason) == (reject["code"], reject["reason_contains"])
        return
    assert isinstance(outcome, Normalized), outcome
    rendered = [json.loads(json_view.render(event)) for event in _events(outcome)]
    assert rendered == case.expected_events()


def test_values_keep_their_types_through_avro() -> None:
    raw = (CORPUS / "insert.in.txt").read_bytes()
    outcome = codec_for(FORMAT_ID, ParseContext())(raw, "orders", 2, 41)
    assert isinstance(outcome, Normalized)
    assert [(table, op, ts) for table, op, ts, _ in outcome.rows] == [("shop.users", "INSERT", 1764979200000)]
    (event,) = _events(outcome)
    assert event.after == {
        "id": 2**64 - 1,
        "name": "Ada; Lovelace",
        "score": Decimal("3.50"),
        "born": dt.date(1815, 12, 10),
        "photo": b"\xff\x00",
        "note": None,
    }
    assert [(c.name, c.logical_type, c.precision, c.scale) for c in event.columns] == [
        ("id", "uint64", None, None),
        ("name", "string", None, None),
        ("score", "decimal", 10, 2),
        ("born", "date", None, None),
        ("photo", "bytes", None, None),
        ("note", "string", None, None),
    ]
    assert (event.origin.topic, event.origin.partition, event.origin.offset) == ("orders", 2, 41)
    assert event.order_key == "00000000000000000003.00000000000000000120.000000"


@pytest.mark.parametrize(
    ("line", "code", "reason"),
    [
        (b"\xff|x", "malformed", "not a csvish line: invalid utf-8 text at byte 0 (invalid start byte)"),
        (b"", "unsupported", "unknown op '' (expected I, U or D)"),
        (b"I|a.b|f.1:2|3|id:int=4|x", "malformed", "INSERT line: expected 5 '|'-separated fields, got 6"),
        (b"I|a.b|no-position|3|id:int=4", "bad_field", "field 3 must be 'binlog-file:offset', got 'no-position'"),
        (b"I|a.b|bin:2|3|id:int=4", "bad_field", "binlog file name 'bin' has no sequence number of at most 20 digits"),
        (b"I|a.b|f.1:2|soon|id:int=4", "bad_field", "field 4 must be the event time in epoch milliseconds, got 'soon'"),
        (b"I|a.b|f.1:2|3|id=4", "bad_field", "column 'id' must be '[*]name:type[=value]'"),
        (b"I|a.b|f.1:2|3|id:int=4;id:int=5", "inconsistent", "column 'id' appears twice"),
        (b"I|a.b|f.1:2|3|id:int=%FF", "bad_field", "column 'id': its percent-encoding is not UTF-8"),
        (b"I|a.b|f.1:2|3|d:date=2024-13-01", "bad_value", "row column 'd' (type date): "),
        (b"U|a.b|f.1:2|3|id:int=4|", "bad_field", "an update's field 6 names no changed column"),
        (b"I|a.b|f.1:99999999999999999999|3|id:int=4", "bad_field", "field 3 must be 'binlog-file:offset', got "),
    ],
)
def test_a_bad_line_is_a_reject_with_its_reason(line: bytes, code: str, reason: str) -> None:
    outcome = codec_for(FORMAT_ID, ParseContext())(line, "t", 0, 0)
    assert isinstance(outcome, Rejected), outcome
    assert outcome.code == code
    assert outcome.reason.startswith(reason), outcome.reason


@given(raw=st.binary(max_size=200))
def test_random_bytes_never_raise(raw: bytes) -> None:
    _never_raises(raw)


_GOLDEN_LINES = [case.raw() for case in CASES]
_pieces = st.sampled_from(["|", ";", "=", ":", "*", ".", "%", "%2", "-", "0", "9" * 25, "int", "date", "", "\x00"])


@given(data=st.data(), cut=st.integers(0, 400), pieces=st.lists(_pieces, max_size=4))
def test_mutated_golden_lines_never_raise(data: st.DataObject, cut: int, pieces: list[str]) -> None:
    line = data.draw(st.sampled_from(_GOLDEN_LINES))
    at = cut % (len(line) + 1)
    _never_raises(line[:at] + "".join(pieces).encode() + line[at + data.draw(st.integers(0, 3)) :])


def _never_raises(raw: bytes) -> None:
    """The parser raises nothing but ``RejectError``; what it accepts encodes and decodes unchanged."""
    try:
        parsed = csvish.parse(raw, ParseContext(topic="prop", offset=7))
    except RejectError as exc:
        assert exc.code in REJECT_CODES and exc.reason
        return
    outcome = registry.get(FORMAT_ID)(raw, ParseContext(topic="prop", offset=7))  # the boundary's checks too
    if isinstance(outcome, Rejected):
        assert outcome.code == "bad_field", outcome  # check_event: a position beyond 64 bits
        return
    for event in parsed.events:
        json_view.render(event)
        assert avro.decode(avro.encode(event)) == event


@pytest.mark.parametrize(
    ("format_id", "target", "message"),
    [
        ("canal-json", TARGET, "format canal-json is built into binlake"),
        (FORMAT_ID, "tests.formats.extension.csvish.parser:SPEC", "already registered as"),
        ("acme cdc", TARGET, "format id 'acme cdc': expected letters, digits"),
        ("acme-cdc", "acme_cdc.spec", "is not 'module:attribute'"),
    ],
)
def test_register_refuses(format_id: str, target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        registry.register(format_id, target)


def test_register_again_with_the_same_target_does_nothing() -> None:
    registry.register(FORMAT_ID, TARGET)
    assert registry.spec(FORMAT_ID).format_id == FORMAT_ID


@pytest.mark.parametrize(
    ("format_id", "target", "message"),
    [
        ("csvish-missing", "tests.formats.extension.nowhere:SPEC", "cannot import .*ModuleNotFoundError"),
        ("csvish-noattr", "tests.formats.extension.csvish.spec:NOPE", "cannot import .*AttributeError"),
        ("csvish-notspec", "tests.formats.extension.csvish.parser:parse", "is function, not a FormatSpec"),
        ("csvish-otherid", TARGET, "is the spec of format 'csvish', not a FormatSpec of 'csvish-otherid'"),
    ],
)
def test_a_bad_target_stops_the_start(format_id: str, target: str, message: str) -> None:
    registry.register(format_id, target)  # lazy: nothing imported yet
    with pytest.raises(ConfigError, match=message):
        codec_for(format_id, ParseContext())


def test_unknown_format_names_the_way_to_add_one() -> None:
    with pytest.raises(ConfigError, match=r"unknown format 'nope'; known formats: .*csvish.*BINLAKE_FORMAT_SPECS"):
        codec_for("nope", ParseContext())


def test_the_normalizer_registers_binlake_format_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_FORMAT", FORMAT_ID)
    monkeypatch.setenv("BINLAKE_INPUT_TOPICS", "csvish.in")
    monkeypatch.setenv("BINLAKE_FORMAT_SPECS", json.dumps({FORMAT_ID: TARGET}))
    settings = NormalizerSettings()  # required fields from the environment
    assert settings.format_specs == {FORMAT_ID: TARGET}
    normalizer = Normalizer(settings, KafkaSettings())
    assert normalizer.codec.format_id == FORMAT_ID
    bad = settings.model_copy(update={"format_specs": {"canal-json": TARGET}})
    with pytest.raises(ConfigError, match="BINLAKE_FORMAT_SPECS: format canal-json is built into binlake"):
        Normalizer(bad, KafkaSettings())


def _normalize(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "binlake.shared.cli.main", "normalize", *args],
        cwd=ROOT,  # the test format's package, importable as a user's module would be
        capture_output=True,
        check=False,
        timeout=60,
    )


def test_binlake_normalize_with_format_spec(tmp_path: Path) -> None:
    source = tmp_path / "lines.txt"
    source.write_bytes(b"\n".join(case.raw() for case in CASES) + b"\n")
    dlq = tmp_path / "dlq.jsonl"
    result = _normalize(
        "--format", FORMAT_ID, "--format-spec", f"{FORMAT_ID}={TARGET}", "--output", "avro", "--dlq", str(dlq),
        str(source),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = [avro.decode(base64.b64decode(line)) for line in result.stdout.splitlines()]
    expected = [case for case in CASES if case.expected_reject() is None]
    assert [_view(event) for event in events] == [_view_of(case.expected_events()[0]) for case in expected]
    letters = [json.loads(line) for line in dlq.read_text().splitlines()]
    rejects = [case.expected_reject() for case in CASES if case.expected_reject() is not None]
    assert [(letter["code"], letter["reason"]) for letter in letters] == [
        (reject["code"], reject["reason_contains"]) for reject in rejects if reject is not None
    ]


def _view(event: ChangeEvent) -> dict[str, Any]:
    return _view_of(json.loads(json_view.render(event)))


def _view_of(rendered: dict[str, Any]) -> dict[str, Any]:
    """An event's JSON view without its origin (the offline run reads a file, the golden cases a topic)."""
    return {key: value for key, value in rendered.items() if key != "origin"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format-spec", "csvish"], "--format-spec 'csvish': expected ID=MODULE:ATTR"),
        (["--format-spec", "canal-json=x.y:SPEC"], "--format-spec: format canal-json is built into binlake"),
    ],
)
def test_binlake_normalize_refuses_a_bad_format_spec(args: list[str], message: str) -> None:
    result = _normalize("--format", FORMAT_ID, *args, "-")
    assert result.returncode == 2
    assert message in result.stderr.decode()
