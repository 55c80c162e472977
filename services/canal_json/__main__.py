"""``python -m binlake.services.canal_json``: the Kafka normalizer for ``canal-json`` (settings from BINLAKE_* env)."""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("canal-json"))
