"""``python -m binlake.services.oms_default [FORMAT]``: the Kafka normalizer for ``oms-default`` and
``oms-extend-column-type``.

The first argument picks the format (default ``oms-default``); settings come from BINLAKE_* env.
"""

import sys

from binlake.shared.cli.main import main_for

FORMATS = ("oms-default", "oms-extend-column-type")
chosen = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in FORMATS else FORMATS[0]
sys.exit(main_for(chosen))
