"""What the fuzzer starts from: each format's golden corpus and a little generated traffic.

A fuzz input is one byte that picks the parse settings (a *context*: time
zone, options, source table, among those the format's golden cases and
generated traffic use), then the vendor message. Seeding with every golden
case (``tests/corpus``) and with messages ``binlake generate`` renders (every
column type, every operation, which the fast lanes take) starts the mutations
from real messages instead of from nothing, so the first mutations already
reach the value converters and the lanes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
TOPIC = "fuzz.topic"
PARTITION = 3
OFFSET = 41
GENERATED_PER_ZONE = 8
"""Generated messages per format and zone (two zones): enough for every operation and column type."""
GENERATED_ZONES = ("UTC", "Asia/Shanghai")


@dataclass(frozen=True)
class Setting:
    """The parse settings of one context, as a golden case's ``ctx.json`` spells them."""

    source_table: str | None = None
    source_timezone: str = "UTC"
    options: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        return json.dumps([self.source_table, self.source_timezone, self.options], sort_keys=True)

    def context(self) -> ParseContext:
        return ParseContext(
            topic=TOPIC,
            partition=PARTITION,
            offset=OFFSET,
            source_table=self.source_table,
            source_timezone=zone(self.source_timezone),
            options=dict(self.options),
        )


@dataclass
class Target:
    """One format to fuzz: its contexts and its seed inputs (selector byte + message)."""

    format_id: str
    settings: list[Setting] = field(default_factory=list)
    seeds: list[bytes] = field(default_factory=list)

    def setting_index(self, setting: Setting) -> int:
        keys = [s.key() for s in self.settings]
        if setting.key() not in keys:
            self.settings.append(setting)
            return len(self.settings) - 1
        return keys.index(setting.key())

    def add(self, setting: Setting, raw: bytes) -> None:
        framed = bytes([self.setting_index(setting)]) + raw
        if framed not in self.seeds:
            self.seeds.append(framed)

    def save(self, folder: Path) -> None:
        """Write the settings (``target.json``) and the seeds (``seeds/``) for a fuzzing process."""
        (folder / "seeds").mkdir(parents=True, exist_ok=True)
        settings = [
            {"source_table": s.source_table, "source_timezone": s.source_timezone, "options": s.options}
            for s in self.settings
        ]
        (folder / "target.json").write_text(json.dumps({"format_id": self.format_id, "settings": settings}))
        for i, seed in enumerate(self.seeds):
            (folder / "seeds" / f"seed-{i:04d}").write_bytes(seed)

    @classmethod
    def load(cls, folder: Path) -> Target:
        spec = json.loads((folder / "target.json").read_text())
        settings = [Setting(s["source_table"], s["source_timezone"], s["options"]) for s in spec["settings"]]
        seeds = [p.read_bytes() for p in sorted((folder / "seeds").iterdir())]
        return cls(spec["format_id"], settings, seeds)

    def split(self, data: bytes) -> tuple[int, bytes]:
        """(context index, message) of one fuzz input."""
        if not data:
            return 0, b""
        return data[0] % len(self.settings), data[1:]


def _case_setting(folder: Path, name: str) -> Setting:
    path = folder / f"{name}.ctx.json"
    spec: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    options = dict(spec.get("options", {}))
    if "avro_schema_file" in spec:
        options["avro_schema"] = json.loads((folder / spec["avro_schema_file"]).read_text())
    return Setting(spec.get("source_table"), spec.get("source_timezone", "UTC"), options)


def _generated(format_id: str) -> list[tuple[Setting, bytes]]:
    from binlake.shared.cli.generate import messages
    from binlake.shared.generate import render
    from binlake.shared.generate.workload import Workload

    if format_id not in render.RENDERERS:
        return []
    options = render.parse_options(format_id)
    out: list[tuple[Setting, bytes]] = []
    for seed, zone_name in enumerate(GENERATED_ZONES, start=1):
        setting = Setting(None, zone_name, dict(options))
        out.extend(
            (setting, raw)
            for _, raw in messages(format_id, Workload(seed=seed, tables=3), GENERATED_PER_ZONE, zone_name)
        )
    return out


def _from_corpus() -> dict[str, Target]:
    """Every registered format, seeded with its golden cases (``registry.format_ids()`` order)."""
    found = {format_id: Target(format_id) for format_id in registry.format_ids()}
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir() and p.name in found):
        names = sorted({p.name.split(".")[0] for p in folder.iterdir() if ".in." in p.name})
        for name in names:
            json_path = folder / f"{name}.in.json"
            if json_path.exists():
                raw = json_path.read_bytes()
            else:
                import base64

                raw = base64.b64decode((folder / f"{name}.in.b64").read_text().strip())
            found[folder.name].add(_case_setting(folder, name), raw)
    return found


def _with_default_setting(found: dict[str, Target]) -> dict[str, Target]:
    for target in found.values():
        if not target.settings:
            target.settings.append(Setting())
    return found


@cache
def targets() -> dict[str, Target]:
    """Every registered format with its seeds, in ``registry.format_ids()`` order."""
    found = _from_corpus()
    for format_id, target in found.items():
        if format_id == "auto":  # auto reads every format: seed it with every format's traffic
            for other in registry.format_ids():
                for _, raw in _generated(other)[:2]:
                    target.add(Setting(), raw)
        else:
            for setting, raw in _generated(format_id):
                target.add(setting, raw)
    return _with_default_setting(found)


@cache
def corpus_targets() -> dict[str, Target]:
    """Every registered format seeded with its golden cases alone: the fuzz baseline's (``baseline.py``),
    whose inputs must change only when the corpus does, not when the traffic generator does."""
    return _with_default_setting(_from_corpus())
