"""``python -m shared.cli.demo`` (what ``make demo`` runs): see ``shared.cli.demo.run``."""

import sys

from shared.cli.demo.run import main

sys.exit(main())
