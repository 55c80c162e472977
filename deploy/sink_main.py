"""``binlake sink`` as a spark-submit application (the Spark operator's SparkApplication, helm sink.mode).

spark-submit starts the driver's JVM with the SparkApplication's sparkConf (packages, Ivy cache, Delta's
extension and catalog: the chart sets the same as spark_sink/session.py), then runs this file; the sink's
session builder finds that context and uses it. BINLAKE_SINK_MASTER is left to spark-submit's master.
"""

from __future__ import annotations

import sys

from binlake.shared.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["sink", *sys.argv[1:]]))
