"""`session.update` on a Live session: what the protocol lets change (the delegation's
settings, within its type; triggers, of which none are served), applied whole or
refused by name."""

from __future__ import annotations

from pydantic import ValidationError

from app.live.backend import check_model
from app.live.client_events import ResponsesDelegationUpdate, UpdateConfig
from app.live.config import (
    ClientDelegation,
    LiveConfig,
    ResponsesBackend,
    ResponsesDelegation,
    refusal,
)
from app.llm.catalog import LLMCatalog
from app.protocol.errors import ProtocolError


def updated(
    config: LiveConfig, given: UpdateConfig, llms: LLMCatalog, event_id: str | None
) -> LiveConfig:
    """`config` as `given` changes it (a new object; `config` stays as it was)."""
    if given.triggers:
        raise ProtocolError(
            "invalid_value",
            "Decisions triggers are not served here: send [] or leave them out",
            param="session.triggers",
        )
    change = given.delegation
    if change is None:
        return config
    current = config.delegation
    kind = current.type if current else "client"
    if change.type != kind:
        raise ProtocolError(
            "invalid_value",
            f"the delegation type cannot change (this session's is {kind!r}); start a new "
            "session for another",
            param="session.delegation.type",
        )
    delay = change.acknowledgement_delay_ms
    if delay is None and current is not None:  # omitted: kept
        delay = current.acknowledgement_delay_ms
    if isinstance(change, ResponsesDelegationUpdate) and isinstance(current, ResponsesDelegation):
        merged = {**current.responses.model_dump(exclude_none=True), **(change.responses or {})}
        try:
            backend = ResponsesBackend.model_validate(merged)
        except ValidationError as exc:
            raise refusal(exc, "session.delegation.responses", event_id) from None
        check_model(backend, llms, event_id)
        delegation = current.model_copy(
            update={"responses": backend, "acknowledgement_delay_ms": delay}
        )
        return config.model_copy(update={"delegation": delegation})
    client = ClientDelegation(type="client", acknowledgement_delay_ms=delay)
    return config.model_copy(update={"delegation": client})
