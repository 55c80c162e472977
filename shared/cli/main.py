"""``binlake``: one command, one subcommand per job.

Subcommands are registered in ``_COMMANDS`` with the module that implements
them, imported only when chosen, so ``binlake normalize`` never loads Kafka or
Spark code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Final

from binlake.shared.cli import stopping
from binlake.shared.errors import BinlakeError

_COMMANDS: Final = {
    "normalize": ("binlake.shared.cli.normalize", "normalize vendor messages from a file or stdin (offline)"),
    "formats": ("binlake.shared.cli.formats", "list the vendor format ids"),
    "dev": ("binlake.shared.cli.dev", "development tools: a local Kafka broker"),
    "normalizer": ("binlake.shared.cli.normalizer", "run the Kafka normalizer service for one vendor format"),
    "generate": ("binlake.shared.cli.generate", "synthetic MySQL traffic in a vendor format, with ground truth"),
    "dlq": ("binlake.shared.cli.dlq", "dead-letter tools: replay"),
    "topics": ("binlake.shared.cli.topics", "create binlake's topics, replicated as the cluster allows or as asked"),
    "config": ("binlake.shared.cli.config", "print every BINLAKE_* setting (example env file or reference)"),
    "sink": ("binlake.spark_sink.cli", "run the Spark sink: unified topic -> changelog and mirror Delta tables"),
    "current": ("binlake.spark_sink.mirror.current_cli", "a source table as the changelog holds it now (Spark)"),
    "lake": ("binlake.spark_sink.lake.cli", "inspect the sink's lake (show) and check it against the topic (verify)"),
}
_SERVICES: Final = frozenset({"normalizer", "sink"})
"""Long-running commands: SIGTERM and SIGINT stop them cleanly (status 0) from ``main``'s first line
(``shared.cli.stopping``); the other commands keep the default actions."""


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Only the command ``argv`` names is imported (each imports what it
    runs: pydantic, Spark's settings...; ``binlake normalize`` starts in a tenth of the time); without
    ``argv``, every command is."""
    parser = argparse.ArgumentParser(prog="binlake", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((arg for arg in argv if arg in _COMMANDS), None) if argv is not None else None
    for name, (module_name, help_text) in _COMMANDS.items():
        if argv is not None and name != chosen:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    # First of all: building the parser imports every command (half a second) and a service's
    # start takes seconds more; a SIGTERM meanwhile must stop it cleanly, not kill it (status -15).
    stopping.hold()
    try:
        args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    except BaseException:
        stopping.release()  # --help, a usage error: a signal that came meanwhile acts as it would have
        raise
    if args.command not in _SERVICES:
        stopping.release()
    try:
        return _run(args)
    finally:
        stopping.release(redeliver=False)  # a service has acted on its signal: it stopped


def main_for(format_id: str) -> int:
    """``python -m binlake.services.<format>``: the normalizer with its format fixed (other settings from env).

    Here rather than in ``shared.cli.normalizer``, whose imports (settings) would run
    before ``main`` holds the signals.
    """
    return main(["normalizer", "--format", format_id, *sys.argv[1:]])


def _run(args: argparse.Namespace) -> int:
    module = importlib.import_module(_COMMANDS[args.command][0])
    try:
        code: int = module.run(args)
    except BinlakeError as exc:
        print(f"binlake {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
