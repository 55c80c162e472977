"""``python -m binlake.services.ckafka_v1``: the Kafka normalizer for ``ckafka-v1``.

Settings come from BINLAKE_* environment variables (docs/configuration.md).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("ckafka-v1"))
