"""``python -m binlake.services.oms_dataworks``: the Kafka normalizer for ``oms-dataworks``
(settings from BINLAKE_* env).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("oms-dataworks"))
