"""``make bench``: every benchmark, one JSON document on stdout.

Speed and memory targets live here, not in timed tests. Each section reports
its measurements next to its target so a reader sees both.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from tests.bench import normalize_bench


def main() -> int:
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "normalize_canal_json": normalize_bench.run(),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
