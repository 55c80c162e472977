"""The planner's column-kind codes (``shared/kernel/plan.py``) are the Rust lanes' (``src/values.rs``).

A planner answers with a code per column and the Rust side converts by it, so
one code read as another kind would convert values wrongly, or decline them
all. The codes have one definition, ``KIND_CODES`` in ``src/values.rs``, which
the extension exports by name; ``plan.py``'s constants are checked against it.
"""

from __future__ import annotations

import pytest

from binlake.shared.kernel import plan
from tests.support.lane_support import NEEDS_LANE

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]


def python_codes() -> dict[str, int]:
    """``plan.py``'s kind constants: its public upper-case names bound to ints."""
    return {name: value for name, value in vars(plan).items() if name.isupper() and type(value) is int}


def test_the_planner_codes_are_the_lane_codes() -> None:
    from binlake.shared.kernel import _kernel

    rust = dict(_kernel.KIND_CODES)
    python = python_codes()
    for name in sorted(rust.keys() | python.keys()):
        assert python.get(name) == rust.get(name), f"kind {name}: plan.py's code, then src/values.rs's"
    assert len(set(rust.values())) == len(rust), "one code per kind"
