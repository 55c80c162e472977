import sys

from services.faust_peer.app import main

sys.exit(main())
