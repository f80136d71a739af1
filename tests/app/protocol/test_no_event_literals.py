"""Event types are named by their classes outside app/protocol/: no event-type string is
written by hand in the realtime session or the WebRTC transport, so a new dialect or a
renamed event is one change in app/protocol/."""

from __future__ import annotations

import ast
from pathlib import Path

from app.protocol.parsing import KNOWN_TYPES
from app.protocol.server_events import EVENT_TYPES, ga

ROOT = Path(__file__).resolve().parents[3]
CHECKED = ["app/realtime", "app/server/webrtc"]

# Dotted names only: "error" is also a field of a response's status details.
NAMES = {
    name
    for name in (
        {cls.TYPE for cls in EVENT_TYPES.values()}
        | set(ga.RENAMED.values())
        | {ga.ITEM_ADDED}
        | set(KNOWN_TYPES)
    )
    if "." in name
}
PREFIXES = {name.split(".")[0] + "." for name in NAMES}


def event_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string that is an event type, or an f-string that makes one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in NAMES:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and str(head.value).startswith(tuple(PREFIXES)):
                found.append((node.lineno, f"f{head.value!r}..."))
    return found


def test_the_check_finds_event_names_written_by_hand() -> None:
    source = 'a = "response.done"\nb = f"input_audio_buffer.speech_{edge}"\nc = "response done"\n'
    assert event_literals(source) == [(1, "response.done"), (2, "f'input_audio_buffer.speech_'...")]


def test_no_event_type_is_written_by_hand_in_the_session_or_webrtc() -> None:
    offenders = []
    for folder in CHECKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            offenders += [f"{relative}:{n}: {text}" for n, text in event_literals(path.read_text())]
    assert offenders == []
