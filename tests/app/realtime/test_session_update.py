"""`session.update`'s one refusal names every field refused."""

from __future__ import annotations

from app.protocol.errors import ProtocolError
from app.realtime.session_update import one_refusal


def test_the_first_refusal_names_the_others_fields_too() -> None:
    first = ProtocolError("invalid_value", "voice 'x' is not available", param="session.voice")
    others = [ProtocolError("model_not_found", "no such model", param="session.model")]
    refusal = one_refusal([first, *others, ProtocolError("load_failed", "failed")])
    assert (refusal.code, refusal.param) == ("invalid_value", "session.voice")
    assert refusal.message == (
        "voice 'x' is not available (also refused: session.model, load_failed)"
    )
    assert one_refusal([first]) is first
