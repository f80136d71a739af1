"""`session.update`, all or nothing: every field is checked and every model it names is
loaded before anything changes; one refusal undoes the rest and names every field
refused, so a client fixes them at once and never sees half an update."""

from __future__ import annotations

from app.protocol.client_events import SessionUpdate
from app.protocol.errors import ProtocolError
from app.realtime.chosen_models import ChosenModels
from app.realtime.session_config import SessionConfig


async def apply_update(
    event: SessionUpdate, config: SessionConfig, models: ChosenModels, voices: list[str]
) -> None:
    """Change `config` and `models` as `event` asks, or raise the ProtocolError that says
    why not (both are then as they were)."""
    if event.refused:
        raise one_refusal(event.refused)
    before = config.snapshot()
    refused = config.apply(
        event.session,
        voices,
        models.transcriber_names(),
        models.llm_names(),
        models.transcriber_languages,
    )
    if not refused:
        refused = await models.switch(config)
        if refused:  # a model that would not load: back to the models it had
            config.restore(before)
            await models.switch(config)
    if refused:
        config.restore(before)
        raise one_refusal(refused)


def one_refusal(refused: list[ProtocolError]) -> ProtocolError:
    """The first refusal, naming the others' fields too (a client fixes them at once)."""
    first = refused[0]
    others = [e.param or e.code for e in refused[1:]]
    if not others:
        return first
    also = f" (also refused: {', '.join(others)})"
    return ProtocolError(first.code, first.message + also, param=first.param)
