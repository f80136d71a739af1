"""The wire JSON of every server event, in both dialects, is what it was when recorded.

wire_golden.json was recorded from the code before server events became types (set
R1VOICE_RECORD_GOLDEN=1 to record it again, only for an intended change of the wire).
The texts are compared exactly: field order included; only the random event ids are
replaced by a placeholder.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

from app.protocol.dialect import BETA, GA
from app.realtime.outbox import Outbox
from tests.app.protocol.golden_cases import cases

GOLDEN = Path(__file__).with_name("wire_golden.json")
EVENT_ID = re.compile(r'"event_id":"event_[0-9a-f]{20}')
# (dialect, whether the client asked for our r1voice.* events)
VARIANTS = {"ga": (GA, True), "beta": (BETA, True), "ga_plain": (GA, False)}


def wire(event: Any, dialect: str, extensions: bool) -> list[str]:
    """What a client of `dialect` receives for `event`, its event ids made fixed."""

    async def main() -> list[str]:
        outbox = Outbox(dialect, extensions=extensions)
        outbox.emit(event)
        outbox.close()
        texts = []
        while (text := await outbox.get_text()) is not None:
            texts.append(EVENT_ID.sub('"event_id":"event_ID', text))
        return texts

    return asyncio.run(main())


def record() -> dict[str, dict[str, list[str]]]:
    return {
        variant: {name: wire(event, dialect, ext) for name, event in cases(dialect == GA)}
        for variant, (dialect, ext) in VARIANTS.items()
    }


def test_every_server_event_has_its_recorded_wire_json_in_both_dialects() -> None:
    now = record()
    if os.environ.get("R1VOICE_RECORD_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(now, indent=1, ensure_ascii=False) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert now.keys() == golden.keys()
    for variant in now:
        assert now[variant].keys() == golden[variant].keys(), variant
        for name, texts in now[variant].items():
            assert texts == golden[variant][name], f"{variant}: {name}"


def test_the_golden_file_covers_each_dialect_s_own_events() -> None:
    golden = json.loads(GOLDEN.read_text())
    ga_types = {json.loads(t)["type"] for texts in golden["ga"].values() for t in texts}
    beta_types = {json.loads(t)["type"] for texts in golden["beta"].values() for t in texts}
    plain_types = {json.loads(t)["type"] for texts in golden["ga_plain"].values() for t in texts}
    assert {
        "conversation.item.added",
        "conversation.item.done",
        "response.output_audio.delta",
    } <= ga_types
    assert {"conversation.item.created", "response.audio.delta"} <= beta_types
    assert "conversation.item.done" not in beta_types
    assert not any(t.startswith("r1voice.") for t in plain_types)
    assert {t for t in ga_types if t.startswith("r1voice.")} == {
        "r1voice.interruption",
        "r1voice.reasoning.delta",
        "r1voice.reasoning.done",
        "r1voice.turn.metrics",
    }
