"""The responses of one session: a switched LLM answers from the next response on, while
the one running finishes on the LLM it started with."""

from __future__ import annotations

import asyncio

from app.protocol.schemas import ResponseOptions
from app.realtime.conversation import Conversation, Item
from app.realtime.responses.responses import Responses
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome
from app.realtime.session_config import SessionConfig
from app.settings import Settings
from tests.fakes import ScriptedLLM, ScriptedVoices


def test_a_switched_llm_answers_from_the_next_response_on() -> None:
    async def main() -> tuple[ScriptedLLM, ScriptedLLM, list[ResponseOutcome]]:
        hold = asyncio.Event()
        first, second = ScriptedLLM(["Old."], hold=hold), ScriptedLLM(["New."])
        conversation = Conversation()
        conversation.add(Item(id="user1", role="user", text="What is it?"))
        deps = ResponseDeps(
            sink=lambda _event: None,
            conversation=conversation,
            llm=first,
            voices=ScriptedVoices(),
            audio_lead_ms=10_000,
        )
        outcomes: list[ResponseOutcome] = []
        ended = asyncio.Event()

        def done(outcome: ResponseOutcome) -> None:
            outcomes.append(outcome)
            ended.set()

        responses = Responses(SessionConfig.default(Settings(), first.model), deps, done)
        text = ResponseOptions(modalities=["text"])
        responses.start(text)
        await first.opened.wait()  # in flight on the first LLM
        responses.use_llm(second)
        hold.set()
        await ended.wait()
        ended.clear()
        responses.start(text)
        await ended.wait()
        return first, second, outcomes

    first, second, outcomes = asyncio.run(main())
    assert [o.status for o in outcomes] == ["completed", "completed"]
    assert (len(first.prompts), len(second.prompts)) == (1, 1)
