"""``python -m services.drs_avro``: the Kafka normalizer for ``drs-avro`` (settings from BINLAKE_* env)."""

import sys

from shared.cli.main import main_for

sys.exit(main_for("drs-avro"))
