"""``auto``'s lane: the auto parser's own format detection, then the detected format's lane.

``services.auto.parser`` classifies each message by the fields it carries and
hands it to that format's parser, whose event is then the auto parser's, byte
for byte. This lane does the same with lanes: the same rules in Rust
(``_kernel.auto_format``: the not-JSON test, then ``src/detect.rs`` on the lanes' JSON reader; a
differential test holds it to the Python ``detect``), then the lane of the
detected format, built once per format with the auto context's options. A
message the native detection does not read with certainty, or whose format
has no lane under these options, is declined: the Python path then detects
it and parses it, or rejects it with auto's reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.kernel import _kernel
from binlake.shared.kernel.lanes import Lane, Taken, lane_for
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    return AutoLane(ctx, topic_tables)


class AutoLane:
    def __init__(self, ctx: ParseContext, topic_tables: Mapping[str, str]) -> None:
        self._ctx = ctx
        self._topic_tables = dict(topic_tables)
        self._lanes: dict[str, Lane | None] = {}

    def _build_lane(self, format_id: str) -> Lane | None:
        lane = self._lanes[format_id] = lane_for(format_id, self._ctx, self._topic_tables)
        return lane

    def parse(self, raw: bytes, topic: str, partition: int, offset: int) -> Taken | None:
        # One native call for the auto parser's first test (not JSON: a DTS Avro record, oms-avro) and
        # its rules; the hot path is a dict lookup and the detected lane (no copy of the message).
        format_id = _kernel.auto_format(raw)
        if format_id is None:
            return None
        try:
            lane = self._lanes[format_id]
        except KeyError:  # once per format
            lane = self._build_lane(format_id)
        return None if lane is None else lane.parse(raw, topic, partition, offset)

    def planned(self) -> int:
        return sum(lane.planned() for lane in self._lanes.values() if lane is not None)
