"""``python -m services.oms_avro``: the Kafka normalizer for ``oms-avro`` (settings from BINLAKE_* env)."""

import sys

from shared.cli.main import main_for

sys.exit(main_for("oms-avro"))
