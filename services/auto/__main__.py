"""``python -m binlake.services.auto``: the Kafka normalizer for ``auto`` (settings from BINLAKE_* env)."""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("auto"))
