"""The broker gate: work that needs the broker runs side by side; the broker's restart waits for it and holds
new work back until the broker is up again.

Traffic is produced in chunks inside the gate, so the outage never cuts a chunk: every message the player
sent has a known partition and offset (an idempotent producer cut off mid-send could leave a message
written with no answer, and the ground truth would not know where it is).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class BrokerGate:
    def __init__(self) -> None:
        self._up = asyncio.Event()
        self._up.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._users = 0

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[None]:
        await self._up.wait()
        self._users += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._users -= 1
            if not self._users:
                self._idle.set()

    def outage_pending(self) -> bool:
        """A restart waits for the work under way to end (new work is held back until the broker is up)."""
        return not self._up.is_set()

    @contextlib.asynccontextmanager
    async def outage(self) -> AsyncIterator[None]:
        self._up.clear()
        try:
            await self._idle.wait()
            yield
        finally:
            self._up.set()
