"""``python -m binlake.shared.cli.demo`` (what ``make demo`` runs): see ``shared.cli.demo.run``."""

import sys

from binlake.shared.cli.demo.run import main

sys.exit(main())
