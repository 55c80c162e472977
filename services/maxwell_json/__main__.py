"""``python -m binlake.services.maxwell_json``: the Kafka normalizer for ``maxwell-json``
(settings from BINLAKE_* env).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("maxwell-json"))
