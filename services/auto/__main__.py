"""``python -m services.auto``: the Kafka normalizer for ``auto`` (settings from BINLAKE_* env)."""

import sys

from shared.cli.main import main_for

sys.exit(main_for("auto"))
