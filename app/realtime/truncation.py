"""`conversation.item.truncate`: an assistant audio item keeps only what the client heard.

An answer still being generated stops first (the client stopped playing it), so what it
says next is not kept either; a paused one (speech over it, not yet known to be an
interruption) keeps what was heard until its fate is known.
"""

from __future__ import annotations

from app.protocol.client_events import ItemTruncate
from app.protocol.errors import ProtocolError
from app.realtime.conversation import Conversation
from app.realtime.responses.responses import Responses


async def truncate(event: ItemTruncate, responses: Responses, conversation: Conversation) -> None:
    """Cut the item as `event` asks, or raise the ProtocolError that says why not."""
    response = responses.recent(event.item_id)
    if response is not None and response.item not in conversation.items:
        # Gone already: a continued turn deleted the answer to its first half (told
        # with conversation.item.deleted) just as the client truncates it on barge-in.
        # Nothing of it is kept, which is what the truncate asks: confirm it.
        return
    item = conversation.get(event.item_id)
    if item.role != "assistant" or response is None or not response.spec.audio:
        raise ProtocolError(
            "invalid_item", f"item '{item.id}' is not an assistant audio item", param="item_id"
        )
    if event.audio_end_ms > response.audio_ms + 1:
        raise ProtocolError(
            "invalid_value",
            f"audio_end_ms {event.audio_end_ms} is past the item's audio ({response.audio_ms:.0f} ms)",
            param="audio_end_ms",
        )
    if response.paused and not response.done:
        # Clients truncate on speech_started; here that speech only paused the answer,
        # and its words decide: a resume sends the rest again (the item ends whole),
        # an interruption cuts it at what was heard, as the truncate asks.
        response.truncate_paused(event.audio_end_ms)
        return
    if not response.done:
        await response.cancel("client_cancelled")
    item.text = response.text_played(event.audio_end_ms)
