"""``python -m binlake.services.oms_avro``: the Kafka normalizer for ``oms-avro`` (settings from BINLAKE_* env)."""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("oms-avro"))
