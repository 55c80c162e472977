"""``csvish``: a made-up line format, registered from outside binlake (tests/formats/extension).

``TARGET`` is what a user's configuration names (``BINLAKE_FORMAT_SPECS``, ``--format-spec``);
``golden_cases()`` its golden cases, in ``corpus/`` beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.corpus_cases import Case
from tests.formats.extension.csvish.parser import FORMAT_ID

__all__ = ["CORPUS", "FORMAT_ID", "TARGET", "golden_cases"]

TARGET: Final = "tests.formats.extension.csvish.spec:SPEC"
CORPUS: Final = Path(__file__).parent / "corpus"


def golden_cases() -> list[Case]:
    """The golden cases, by name."""
    return [Case(FORMAT_ID, name, CORPUS) for name in sorted({p.name.split(".")[0] for p in CORPUS.glob("*.in.*")})]
