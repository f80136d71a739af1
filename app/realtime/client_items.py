"""Items a client adds with `conversation.item.create`: what each becomes in the
conversation, what is echoed back, and the checks that refuse one no answer could use."""

from __future__ import annotations

from app.llm import LLMBackend
from app.llm.tool_calls import call_text
from app.protocol import events
from app.protocol.client_events import (
    ConversationItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    ItemCreate,
    McpApprovalResponseItem,
)
from app.protocol.errors import ProtocolError
from app.protocol.server_events import Wire
from app.realtime.conversation import MESSAGE_OVERHEAD_TOKENS, Item, item_tokens
from app.tools.mcp_items import approval_response


def item_from_client(event: ItemCreate) -> Item:
    """The conversation item of a client's `conversation.item.create` (a message's parts
    joined into one text; audio content is refused: it is streamed, not sent whole)."""
    given = event.item
    item_id = given.id or events.new_id("item")
    if isinstance(given, FunctionCallItem):
        text = call_text(given.name, given.arguments)
        call = (given.call_id, given.name, given.arguments)
        return Item(id=item_id, role="assistant", text=text, kind="function_call", call=call)
    if isinstance(given, McpApprovalResponseItem):
        return approval_response(item_id, given.approval_request_id, given.approve, given.reason)
    if isinstance(given, FunctionCallOutputItem):
        return Item(
            id=item_id,
            role="tool",
            text=given.output,
            kind="function_call_output",
            call_id=given.call_id,
        )
    if any(p.type in ("input_audio", "audio") and p.audio for p in given.content):
        raise ProtocolError(
            "unsupported_content",
            "audio content in conversation.item.create is not supported; stream it with "
            "input_audio_buffer.append instead",
            param="item.content",
        )
    texts = [p.text or p.transcript or "" for p in given.content]
    return Item(id=item_id, role=given.role, text=" ".join(texts).strip())


def echoed(event: ItemCreate, item: Item) -> Wire:
    """The item as `conversation.item.created` shows it: a message's parts as the client
    sent them."""
    given = event.item
    if isinstance(given, ConversationItem):
        content = [p.model_dump(exclude_none=True) for p in given.content]
        return events.message_item(item.id, item.role, "completed", content)
    return item.to_wire()


async def check_fits(item: Item, llm: LLMBackend) -> None:
    """Refuse an item no answer could ever be generated from: alone it fills the model's
    whole context (the history would keep it, and every later turn would fail until the
    client deleted it)."""
    tokens = await item_tokens(item, llm.count_tokens)
    if tokens + MESSAGE_OVERHEAD_TOKENS >= llm.context_length:
        raise ProtocolError(
            "context_length_exceeded",
            f"the item has {tokens} tokens, more than the model's whole context "
            f"({llm.context_length} tokens): shorten the item or split it",
            param="item",
        )
