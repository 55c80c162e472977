"""Resolve the sink's Spark packages into the sink image's Ivy cache (deploy/Dockerfile, target sink).

Run at image build time with the image's own settings (BINLAKE_SINK_SPARK_IVY_DIR,
BINLAKE_SINK_SPARK_EXTRA_PACKAGES). A local Spark session resolves every package into
``--download-cache`` (a build cache mount, kept between builds: hadoop-aws brings the AWS SDK
bundle, about 700 MB), the result is copied into the image's Ivy folder, and a second session
then starts from that folder with every network connection of the JVM refused (an unreachable
proxy), which proves the container starts offline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from binlake.shared.config.settings import load
from binlake.spark_sink.session import build_session, ivy_dir
from binlake.spark_sink.settings import SinkSettings

# Every HTTP(S) connection of the JVM goes to a closed port: a package missing from the cache fails the build.
OFFLINE_JAVA_OPTIONS = (
    "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=9 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9 "
    "-Dhttp.nonProxyHosts="
)


def _start_and_stop(ivy: Path) -> None:
    settings = load(SinkSettings, master="local[1]", spark_ivy_dir=str(ivy), log_level="ERROR")
    spark = build_session(settings, app_name="binlake-image-packages")
    spark.range(1).count()
    spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--download-cache", type=Path, help="resolve here first, then copy into the image")
    parser.add_argument("--check-offline", action="store_true", help="(internal) start from the image's cache")
    args = parser.parse_args()
    target = ivy_dir(load(SinkSettings))
    if args.check_offline:
        _start_and_stop(target)
        return 0
    if args.download_cache is not None:
        _start_and_stop(args.download_cache)
        # The build mount may also hold packages of earlier builds: copied too, they are never loaded (Spark
        # takes the jars of this resolution only).
        shutil.copytree(args.download_cache, target, dirs_exist_ok=True)
    env = dict(os.environ, JAVA_TOOL_OPTIONS=OFFLINE_JAVA_OPTIONS)
    done = subprocess.run([sys.executable, __file__, "--check-offline"], env=env, check=False)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
