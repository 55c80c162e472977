import sys

from binlake.services.faust_peer.app import main

sys.exit(main())
