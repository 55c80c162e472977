"""What every fuzz input must satisfy, and the tally of a run.

For one input (context byte + vendor message) of one format:

- the parser returns events or raises ``RejectError``; any other exception is
  a *crash* (the runtime would dead-letter it as ``internal``: a parser bug).
  ``RecursionError`` is the registry boundary's ``malformed`` reject, as in
  the runtime;
- a reject carries a stable code (``REJECT_CODES``, never ``internal``) and a
  non-empty reason, else it is a *bad reject*;
- every accepted event passes the registry's envelope check, renders in the
  JSON view, and survives the codec: the kernel's Avro body (``encode.rs``) is
  fastavro's byte for byte and decodes back to the same event (else *codec*);
- all of it within the per-input time limit (else a *hang*).

Findings keep the first input of each distinct (kind, place) so a crasher can
be replayed and made a corpus case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import signal
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from binlake.shared.codec import avro, json_view
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import INTERNAL, MALFORMED, REJECT_CODES, RejectError
from binlake.shared.parsing.validate import check_event
from tests.fuzz.seeds import Target

KINDS = {
    "crash": "crashes",
    "hang": "hangs",
    "bad_reject": "bad_rejects",
    "codec": "codec_errors",
}
"""Each kind of finding and its count's name in the summary."""


class Hang(BaseException):
    """Raised by the per-input time limit inside whatever the input was running."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in this thread after ``seconds`` of CPU time (SIGPROF: libFuzzer's own
    ``-timeout`` keeps SIGALRM as the hard limit for a hang Python cannot interrupt)."""
    previous = signal.signal(signal.SIGPROF, _on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@dataclass
class Finding:
    kind: str
    where: str
    detail: str
    data: bytes

    def name(self) -> str:
        return f"{self.kind}-{hashlib.sha1(self.data).hexdigest()[:12]}"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail, "input": self.name()}


@dataclass
class Tally:
    """What one format's run saw."""

    format_id: str
    inputs: int = 0
    accepted: int = 0
    events: int = 0
    rejects: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    seconds: float = 0.0
    """Time spent checking inputs."""
    wall: float = 0.0
    """Time from the first input's start to the last one's end (mutations and the fuzzer's own work too)."""
    first: float | None = None

    def note(self, finding: Finding) -> bool:
        """Count a finding; True when it is the first of its kind and place (its input is kept)."""
        self.found[finding.kind] += 1
        key = (finding.kind, finding.where)
        if key in self.findings:
            return False
        self.findings[key] = finding
        return True

    def as_json(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "seconds": round(self.wall, 1),
            "inputs_per_s": round(self.inputs / self.wall) if self.wall else None,
            "check_seconds": round(self.seconds, 1),
            "accepted": self.accepted,
            "events": self.events,
            "rejects": dict(sorted(self.rejects.items())),
            **{plural: self.found[kind] for kind, plural in KINDS.items()},
            "findings": [f.as_json() for f in self.findings.values()],
        }

    def merge(self, other: dict[str, Any]) -> None:
        """Add another run's ``as_json`` (a restarted child's) to this tally."""
        self.inputs += other["inputs"]
        self.accepted += other["accepted"]
        self.events += other["events"]
        self.wall += other["seconds"]
        self.seconds += other["check_seconds"]
        self.rejects.update(other["rejects"])
        for kind, plural in KINDS.items():
            self.found[kind] += other[plural]
        for f in other["findings"]:
            self.findings.setdefault((f["kind"], f["where"]), Finding(f["kind"], f["where"], f["detail"], b""))


def where(exc: BaseException) -> str:
    """The innermost frame of binlake's own code in ``exc``'s traceback, and the exception's type."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/services/" in f.filename or "/shared/" in f.filename] or frames
    if not ours:
        return type(exc).__name__
    frame = ours[-1]
    return f"{type(exc).__name__} at {'/'.join(frame.filename.split('/')[-2:])}:{frame.lineno} in {frame.name}"


class Oracle:
    """Checks inputs of one format."""

    def __init__(self, target: Target, time_limit_s: float = 1.0) -> None:
        self.target = target
        self.parse = registry.get(target.format_id).parse
        self.contexts: list[ParseContext] = [s.context() for s in target.settings]
        self.time_limit_s = time_limit_s
        self.tally = Tally(target.format_id)
        self.last = ""
        """What the last input did: "reject CODE REASON" or "accepted"."""

    def check(self, data: bytes) -> Finding | None:
        """Run one input; count it; return a new finding (first of its kind and place) or None."""
        started = time.perf_counter()
        if self.tally.first is None:
            self.tally.first = started
        self.tally.inputs += 1
        self.last = "crash"
        try:
            with time_limit(self.time_limit_s):
                finding = self._check(data)
        except Hang:
            self.last = "hang"
            finding = Finding("hang", "time limit", f"over {self.time_limit_s} s of CPU", data)
        ended = time.perf_counter()
        self.tally.seconds += ended - started
        self.tally.wall = ended - self.tally.first
        if finding is not None and self.tally.note(finding):
            return finding
        return None

    def _check(self, data: bytes) -> Finding | None:
        index, raw = self.target.split(data)
        ctx = self.contexts[index]
        events: list[Any] = []
        rejected = False
        try:
            outcome = self.parse(raw, ctx)
            for event in outcome.events:
                check_event(event)
            events = outcome.events
        except RejectError as exc:
            rejected = True
            self.tally.rejects[exc.code] += 1
            self.last = f"reject {exc.code} {exc.reason}"
            if exc.code not in REJECT_CODES or exc.code == INTERNAL or not exc.reason.strip():
                return Finding("bad_reject", f"code {exc.code!r}", f"reason {exc.reason!r}", data)
        except RecursionError:  # the registry boundary's answer: a reject, as the runtime gives it
            rejected = True
            self.tally.rejects[MALFORMED] += 1
            self.last = f"reject {MALFORMED} recursion"
        except Exception as exc:  # noqa: BLE001 - the finding this harness is for
            return Finding("crash", where(exc), "".join(traceback.format_exception(exc)[-12:]), data)
        if not rejected:
            self.last = "accepted"
            self.tally.accepted += 1
            self.tally.events += len(events)
            problem = self._codec(events)
            if problem is not None:
                return dataclasses.replace(problem, data=data)
        return None

    def _codec(self, events: list[Any]) -> Finding | None:
        for event in events:
            try:
                json_view.render(event)
                body = avro.encode_body(event)
                if body != avro.encode_body_reference(event):
                    return Finding("codec", "the kernel's avro writer differs from fastavro", repr(event)[:400], b"")
                encoded = avro.encode(event)  # compared as bytes: a NaN double is not equal to itself
                if avro.encode(avro.decode(encoded)) != encoded:
                    return Finding("codec", "avro round trip changes the event", repr(event)[:400], b"")
            except Exception as exc:  # noqa: BLE001 - the finding this harness is for
                return Finding("crash", "codec: " + where(exc), "".join(traceback.format_exception(exc)[-12:]), b"")
        return None
