"""Ground truth of a workload, in the JSON view's renderings (what ``--truth`` writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlake.shared.codec.json_view import render_value
from binlake.shared.event.values import Image

if TYPE_CHECKING:
    from binlake.shared.generate.workload import Workload


def view(image: Image | None) -> dict[str, Any] | None:
    return None if image is None else {name: render_value(value) for name, value in image.items()}


def render_truth(workload: Workload) -> dict[str, Any]:
    tables: dict[str, dict[str, Any]] = {}
    for table, rows in workload.state.items():
        tables[f"{workload.database}.{table}"] = {str(key): view(row) for key, row in sorted(rows.items())}
    changes = [
        {
            "op": change.op,
            "table": f"{change.database}.{change.table}",
            "key": str(change.key),
            "sequence": change.sequence,
            "before": view(change.before),
            "after": view(change.after),
        }
        for change in workload.changes
    ]
    return {"seed": workload.seed, "tables": tables, "changes": changes}
