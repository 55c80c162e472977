"""``python -m binlake.services.debezium_smt``: the Kafka normalizer for ``debezium-smt``
(settings from BINLAKE_* env).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("debezium-smt"))
