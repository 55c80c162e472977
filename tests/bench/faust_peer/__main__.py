import sys

from tests.bench.faust_peer.app import main

sys.exit(main())
