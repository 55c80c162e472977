"""``binlake formats``: the vendor format ids this build knows."""

from __future__ import annotations

import argparse

from shared.parsing import registry


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    for format_id in registry.format_ids():
        print(format_id)
    return 0
