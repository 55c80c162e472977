"""``python -m binlake.services.oms_shareplex``: the Kafka normalizer for ``oms-shareplex``
(settings from BINLAKE_* env).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("oms-shareplex"))
