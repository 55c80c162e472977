"""A format of one's own in a real ``binlake normalizer`` process, named by ``BINLAKE_FORMAT_SPECS``.

``csvish`` (tests/formats/extension) is not built into binlake: the process imports it from the
module its setting names, publishes its golden lines' events and dead-letters its bad lines with
their reasons, exactly once, as for any built-in format.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from binlake.shared.codec import json_view
from binlake.shared.devbroker.broker import free_port
from binlake.shared.kafka.records import H_ERROR_CLASS, H_FORMAT, H_REASON, header_map
from tests.formats.extension.csvish import FORMAT_ID, TARGET, golden_cases
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode
from tests.support.service_process import Service, clean_env

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ROOT = Path(__file__).parents[2]
CASES = golden_cases()


async def test_a_format_of_ones_own_in_a_normalizer_process(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh(FORMAT_ID)
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 1, topics.events: 1, topics.dlq: 1})
    await kafka_tools.produce(kafka_bootstrap, topics.vendor, [(None, case.raw()) for case in CASES])
    env = clean_env(
        **topics.normalizer_env(),
        BINLAKE_FORMAT=FORMAT_ID,
        BINLAKE_FORMAT_SPECS=json.dumps({FORMAT_ID: TARGET}),
        BINLAKE_KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
        BINLAKE_METRICS_PORT=str(free_port()),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),  # the format's module
    )
    service = Service(["normalizer"], env, tmp_path / "normalizer.log")
    started = time.monotonic()
    try:
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1, timeout_s=90)
    finally:
        code = service.stop()
    assert code == 0, service.output()[-3000:]
    assert time.monotonic() - started < 90

    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    accepted = [(offset, case) for offset, case in enumerate(CASES) if case.expected_reject() is None]
    assert len(events) == len(accepted)
    for (_, event), (offset, case) in zip(events, accepted, strict=True):
        expected = case.expected_events()[0]
        expected["origin"] = {"topic": topics.vendor, "partition": 0, "offset": offset, "row": 0}
        assert json.loads(json_view.render(event)) == expected

    letters = [header_map(record.headers) for record in await kafka_tools.read_all(kafka_bootstrap, topics.dlq)]
    rejects = [case.expected_reject() for case in CASES]
    assert [(letter[H_FORMAT], letter[H_ERROR_CLASS], letter[H_REASON]) for letter in letters] == [
        (FORMAT_ID, reject["code"], reject["reason_contains"]) for reject in rejects if reject is not None
    ]
