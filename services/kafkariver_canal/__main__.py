"""``python -m binlake.services.kafkariver_canal``: the Kafka normalizer for ``kafkariver-canal``.

Settings come from BINLAKE_* environment variables (docs/configuration.md).
"""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("kafkariver-canal"))
