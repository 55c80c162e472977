"""``python -m binlake.services.drs_json [FORMAT]``: the Kafka normalizer for ``drs-json``, ``drs-json-c``.

The first argument picks the format (default ``drs-json``); settings come from BINLAKE_* env.
"""

import sys

from binlake.shared.cli.main import main_for

FORMATS = ("drs-json", "drs-json-c")
chosen = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in FORMATS else FORMATS[0]
sys.exit(main_for(chosen))
