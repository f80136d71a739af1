"""`conversation.item.truncate`: which items may be cut, where, and what they keep."""

from __future__ import annotations

import asyncio

import pytest

from app.protocol.client_events import ItemTruncate, ResponseOptions
from app.protocol.errors import ProtocolError
from app.realtime.conversation import Conversation, Item
from app.realtime.responses.responses import Responses
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome
from app.realtime.session_config import SessionConfig
from app.realtime.truncation import truncate
from app.settings import Settings
from tests.fakes import ScriptedLLM, ScriptedVoices


def cut(item_id: str, audio_end_ms: int) -> ItemTruncate:
    return ItemTruncate(
        type="conversation.item.truncate", item_id=item_id, audio_end_ms=audio_end_ms
    )


async def spoken_answer(words: list[str]) -> tuple[Responses, Conversation, str]:
    """A finished audio answer to one user item: (responses, conversation, its item id)."""
    conversation = Conversation()
    conversation.add(Item(id="user1", role="user", text="What is it?"))
    llm = ScriptedLLM(words)
    deps = ResponseDeps(
        sink=lambda _event: None,
        conversation=conversation,
        llm=llm,
        voices=ScriptedVoices(seconds_per_clause=0.2),
        audio_lead_ms=10_000,
    )
    ended = asyncio.Event()

    def done(_outcome: ResponseOutcome) -> None:
        ended.set()

    responses = Responses(SessionConfig.default(Settings(), llm.model), deps, done)
    answer = responses.start(ResponseOptions(modalities=["audio", "text"]))
    assert answer is not None
    await ended.wait()
    return responses, conversation, answer.item_id


def test_a_spoken_answer_keeps_what_was_heard() -> None:
    async def main() -> list[str | None]:
        kept = []
        for heard_ms in (100, 300):  # two clauses of 200 ms: "One, two." and "Three, four."
            responses, conversation, item_id = await spoken_answer(["One, two. ", "Three, four."])
            await truncate(cut(item_id, heard_ms), responses, conversation)
            kept.append(conversation.get(item_id).text)
        return kept

    assert asyncio.run(main()) == ["One,", "One, two. Three,"]


def test_only_an_assistant_audio_item_may_be_cut_and_not_past_its_audio() -> None:
    async def main() -> list[tuple[str, str | None]]:
        responses, conversation, item_id = await spoken_answer(["Fine."])
        refused = []
        for event in (cut("user1", 0), cut(item_id, 60_000)):
            with pytest.raises(ProtocolError) as exc:
                await truncate(event, responses, conversation)
            refused.append((exc.value.code, exc.value.param))
        return refused

    assert asyncio.run(main()) == [("invalid_item", "item_id"), ("invalid_value", "audio_end_ms")]
