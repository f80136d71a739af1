"""Which dialect of the Realtime protocol a session's client speaks, and what follows from
it on the way in: GA unless the handshake asked for beta; a session the handshake left
open becomes GA at its first GA-shaped `session.update`, which is flattened into the beta
fields we validate (its refusals then name the fields as the client wrote them). On the
way out each event says itself in the dialect (server_events/), and the session object
here."""

from __future__ import annotations

from app.protocol.dialect import GA, flat_session_update, ga_named, ga_session_update, session_to_ga
from app.protocol.errors import ProtocolError
from app.protocol.server_events import Wire
from app.realtime.outbox import Outbox


class ClientDialect:
    """The client's dialect, kept as `outbox.dialect`; `fixed`: told by the handshake."""

    def __init__(self, outbox: Outbox, fixed: bool) -> None:
        self._outbox, self._fixed = outbox, fixed

    def flat(self, raw: str | bytes) -> str | bytes:
        """A GA `session.update` -> the flat shape we validate (and the client is GA);
        any other message as it is."""
        update = ga_session_update(raw)
        if update is None:
            return raw
        if not self._fixed:
            self._outbox.dialect = GA
        return flat_session_update(update)

    @staticmethod
    def refusal(exc: ProtocolError, raw: str | bytes, flat: str | bytes) -> ProtocolError:
        """The refusal of message `raw`: a GA `session.update`'s names its fields as the
        client wrote them."""
        return ga_named(exc) if flat is not raw else exc

    def session_object(self, beta: Wire) -> Wire:
        """Our session object (SessionConfig.to_wire) as the client's dialect shows it."""
        if self._outbox.dialect == GA:
            return session_to_ga(beta)
        # beta's schema allows only OpenAI's model names there: ours is left out, not faked
        return {key: value for key, value in beta.items() if key != "model"}
