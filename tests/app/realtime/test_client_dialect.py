"""The client's dialect: fixed by the handshake, or GA from a GA `session.update` on."""

from __future__ import annotations

import json

from app.protocol.dialect import BETA, GA
from app.protocol.errors import ProtocolError
from app.realtime.client_dialect import ClientDialect
from app.realtime.outbox import Outbox

GA_UPDATE = json.dumps(
    {"type": "session.update", "session": {"type": "realtime", "audio": {"output": {"voice": "v"}}}}
)
SESSION = {"id": "sess_1", "object": "realtime.session", "model": "r1voice", "modalities": ["text"]}


def test_a_ga_update_is_flattened_and_makes_an_open_session_ga() -> None:
    outbox = Outbox(BETA)
    dialect = ClientDialect(outbox, fixed=False)
    flat = dialect.flat(GA_UPDATE)
    assert json.loads(flat)["session"] == {"voice": "v"}
    assert outbox.dialect == GA


def test_a_dialect_the_handshake_fixed_stays_and_other_messages_pass_as_they_are() -> None:
    outbox = Outbox(BETA)
    dialect = ClientDialect(outbox, fixed=True)
    dialect.flat(GA_UPDATE)
    assert outbox.dialect == BETA
    append = '{"type": "input_audio_buffer.append", "audio": ""}'
    assert dialect.flat(append) is append


def test_a_refusal_of_a_ga_update_names_the_field_as_the_client_wrote_it() -> None:
    dialect = ClientDialect(Outbox(GA), fixed=False)
    exc = ProtocolError("invalid_value", "session.voice is unknown", param="session.voice")
    flat = dialect.flat(GA_UPDATE)
    assert dialect.refusal(exc, GA_UPDATE, flat).param == "session.audio.output.voice"
    assert dialect.refusal(exc, "{}", "{}") is exc  # not a GA update: as it was


def test_the_beta_session_object_leaves_our_model_name_out() -> None:
    assert "model" not in ClientDialect(Outbox(BETA), fixed=True).session_object(SESSION)
