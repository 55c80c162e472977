"""``python -m binlake.services.ogg_json``: the Kafka normalizer for ``ogg-json`` (settings from BINLAKE_* env)."""

import sys

from binlake.shared.cli.main import main_for

sys.exit(main_for("ogg-json"))
