"""``python -m binlake.services.drs_avro``: the Kafka normalizer for ``drs-avro`` (settings from BINLAKE_* env)."""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("drs-avro"))
