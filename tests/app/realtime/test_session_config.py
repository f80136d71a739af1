"""A session's defaults come from the server's settings."""

from __future__ import annotations

from app.protocol.session_schema import SEMANTIC_MAX_WAIT_MS
from app.realtime.session_config import SessionConfig
from app.settings import Settings


def test_the_servers_eagerness_is_the_default_sessions_semantic_vad() -> None:
    turn = SessionConfig.default(Settings(turn_eagerness="high"), "m").turn_detection
    assert turn is not None
    assert (turn.type, turn.eagerness) == ("semantic_vad", "high")
    assert turn.silence_duration_ms == SEMANTIC_MAX_WAIT_MS["high"]
    default = SessionConfig.default(Settings(), "m").turn_detection
    assert default is not None and default.eagerness == "auto"


def test_server_vad_by_default_takes_no_eagerness() -> None:
    settings = Settings(turn_detection="server_vad", turn_eagerness="high")
    turn = SessionConfig.default(settings, "m").turn_detection
    assert turn is not None
    assert (turn.type, turn.eagerness, turn.silence_duration_ms) == ("server_vad", None, 500)
