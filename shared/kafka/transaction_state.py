"""Where a producer's transaction stands in aiokafka's state machine, and what may follow from there.

aiokafka checks every transition of a transaction with an ``assert``: from a state that does
not allow it, ``abort_transaction`` or ``begin_transaction`` fail with an AssertionError, not
a KafkaError, and that stopped the normalizer (a commit under way that failed, a sender task
that died in a broker outage). The runtime asks here first, and replaces a producer it cannot
abort (shared/kafka/assignment.py).
"""

from __future__ import annotations

from typing import Final

from aiokafka import AIOKafkaProducer

OPEN: Final = frozenset({"IN_TRANSACTION", "ABORTABLE_ERROR"})
"""aiokafka's transaction states that ``abort_transaction`` can leave (to ABORTING_TRANSACTION)."""
CAN_BEGIN: Final = frozenset({"READY", None})
"""States ``begin_transaction`` can leave (None: not a transactional producer)."""


def transaction_state(producer: AIOKafkaProducer) -> str | None:
    """The name of the producer's transaction state in aiokafka's state machine (None: not transactional).

    aiokafka checks every transition with an ``assert``: from a state that does not allow it,
    ``abort_transaction`` and ``begin_transaction`` fail with an AssertionError, not a KafkaError. There
    is no public accessor; aiokafka's own transaction context reads ``_txn_manager`` the same way.
    """
    manager = getattr(producer, "_txn_manager", None)
    if manager is None or manager.transactional_id is None:
        return None
    return str(manager.state.name)


def cannot_abort(producer: AIOKafkaProducer) -> bool:
    """Whether the producer has a transaction that ``abort_transaction`` cannot end: it must be replaced.

    COMMITTING_TRANSACTION (a commit whose outcome is unknown), ABORTING_TRANSACTION (an abort under way)
    and FATAL_ERROR (the sender task died, as a broker outage can make it: aiokafka marks the
    transaction fatal) all allow no abort.
    """
    return transaction_state(producer) not in OPEN | CAN_BEGIN
