"""``python -m services.debezium_json``: the Kafka normalizer for ``debezium-json`` (settings from BINLAKE_* env)."""

import sys

from shared.cli.main import main_for

sys.exit(main_for("debezium-json"))
