"""``python -m binlake.services.debezium_json``: the Kafka normalizer for ``debezium-json``
(settings from BINLAKE_* env).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("debezium-json"))
