"""Items a client adds: what each becomes, what is echoed, and what is refused."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.llm.tool_calls import call_text
from app.protocol.client_events import ItemCreate
from app.protocol.errors import ProtocolError
from app.protocol.parsing import parse_client_event
from app.realtime.client_items import check_fits, echoed, item_from_client
from app.realtime.conversation import Item
from tests.fakes import ScriptedLLM


def create(item: dict[str, object]) -> ItemCreate:
    event = parse_client_event(json.dumps({"type": "conversation.item.create", "item": item}))
    assert isinstance(event, ItemCreate)
    return event


def test_a_message_joins_its_parts_and_is_echoed_as_sent() -> None:
    parts = [{"type": "input_text", "text": "Hello"}, {"type": "input_text", "text": "there "}]
    event = create({"id": "item_1", "type": "message", "role": "user", "content": parts})
    item = item_from_client(event)
    assert (item.id, item.role, item.text) == ("item_1", "user", "Hello there")
    assert echoed(event, item)["content"] == parts


def test_a_function_call_and_its_output_become_the_items_the_model_reads() -> None:
    call = create({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"})
    item = item_from_client(call)
    assert (item.kind, item.call, item.text) == (
        "function_call",
        ("c1", "f", "{}"),
        call_text("f", "{}"),
    )
    assert echoed(call, item) == item.to_wire()
    output = item_from_client(
        create({"type": "function_call_output", "call_id": "c1", "output": "4"})
    )
    assert (output.kind, output.role, output.call_id, output.text) == (
        "function_call_output",
        "tool",
        "c1",
        "4",
    )


def test_audio_content_is_refused_naming_the_streaming_event() -> None:
    parts = [{"type": "input_audio", "audio": "AAAA"}]
    with pytest.raises(ProtocolError) as refused:
        item_from_client(create({"type": "message", "role": "user", "content": parts}))
    assert (refused.value.code, refused.value.param) == ("unsupported_content", "item.content")
    assert "input_audio_buffer.append" in refused.value.message


def test_an_item_that_fills_the_whole_context_is_refused() -> None:
    llm = ScriptedLLM([], context_length=64)
    asyncio.run(check_fits(Item(id="a", role="user", text="short"), llm))
    with pytest.raises(ProtocolError) as refused:
        asyncio.run(check_fits(Item(id="b", role="user", text="word " * 200), llm))
    assert (refused.value.code, refused.value.param) == ("context_length_exceeded", "item")
