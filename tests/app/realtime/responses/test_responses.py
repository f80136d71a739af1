"""The responses of one session: a switched LLM answers from the next response on, while
the one running finishes on the LLM it started with."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.protocol.client_events import ResponseOptions
from app.protocol.errors import ProtocolError
from app.realtime.conversation import Conversation, Item
from app.realtime.responses.responses import Responses
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome
from app.realtime.session_config import SessionConfig
from app.settings import Settings
from tests.fakes import ScriptedLLM, ScriptedVoices


def _deps(conversation: Conversation, llm: ScriptedLLM, sink: Any) -> ResponseDeps:
    """A session's response parts around a scripted LLM, its voice far ahead of playback."""
    return ResponseDeps(
        sink=sink, conversation=conversation, llm=llm, voices=ScriptedVoices(), audio_lead_ms=10_000
    )


def test_a_switched_llm_answers_from_the_next_response_on() -> None:
    async def main() -> tuple[ScriptedLLM, ScriptedLLM, list[ResponseOutcome]]:
        hold = asyncio.Event()
        first, second = ScriptedLLM(["Old."], hold=hold), ScriptedLLM(["New."])
        conversation = Conversation()
        conversation.add(Item(id="user1", role="user", text="What is it?"))
        deps = _deps(conversation, first, lambda _event: None)
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


def test_a_held_early_answer_gives_way_to_the_clients_response() -> None:
    """An early answer waits, unseen, for its turn to end (a client that cut its
    microphone before the pause leaves it waiting): the client's `response.create` is not
    refused naming a response it never saw, and `response.cancel` finds nothing to cancel."""

    async def main() -> tuple[list[dict[str, Any]], list[ResponseOutcome], list[str]]:
        llm = ScriptedLLM([["Early."], ["Asked."]])
        conversation = Conversation()
        conversation.add(Item(id="user1", role="user", text="What is it?"))
        seen: list[dict[str, Any]] = []
        deps = _deps(conversation, llm, seen.append)
        outcomes: list[ResponseOutcome] = []
        two = asyncio.Event()

        def done(outcome: ResponseOutcome) -> None:
            outcomes.append(outcome)
            if len(outcomes) == 2:
                two.set()

        responses = Responses(SessionConfig.default(Settings(), llm.model), deps, done)
        early = responses.start(early_user_text="What is it?")
        assert early is not None
        await llm.opened.wait()
        refusals = []
        try:
            await responses.cancel()
        except ProtocolError as exc:
            refusals.append(exc.code)
        assert early.held and not early.done  # the refused cancel left it alone
        await responses.create(ResponseOptions(modalities=["text"]), "evt_1")
        await two.wait()
        return seen, outcomes, refusals

    seen, outcomes, refusals = asyncio.run(main())
    assert refusals == ["response_cancel_not_active"]
    assert [o.status for o in outcomes] == ["discarded", "completed"]
    assert [e["type"] for e in seen if e["type"] in ("response.created", "error")] == [
        "response.created"  # the client's own, and nothing of the early answer
    ]


def test_words_to_say_are_said_as_they_are_and_no_model_writes_them() -> None:
    """GPT-Live's commentary (app/live/commentary.py) is said as written: a small model
    told to repeat it garbled it."""

    async def main() -> tuple[ScriptedLLM, Conversation, list[Any], list[ResponseOutcome]]:
        llm = ScriptedLLM(["Something else entirely."])
        conversation = Conversation()
        conversation.add(Item(id="user1", role="user", text="Who wrote Hamlet?"))
        seen: list[Any] = []
        deps = _deps(conversation, llm, seen.append)
        outcomes: list[ResponseOutcome] = []
        ended = asyncio.Event()

        def done(outcome: ResponseOutcome) -> None:
            outcomes.append(outcome)
            ended.set()

        responses = Responses(SessionConfig.default(Settings(), llm.model), deps, done)
        responses.start(say="William Shakespeare wrote Hamlet. It was about 1600.")
        await ended.wait()
        return llm, conversation, seen, outcomes

    llm, conversation, seen, outcomes = asyncio.run(main())
    assert [o.status for o in outcomes] == ["completed"]
    assert llm.prompts == []  # no model was asked
    said = "William Shakespeare wrote Hamlet. It was about 1600."
    answer = conversation.get(conversation.last_id or "")
    assert (answer.role, answer.text) == ("assistant", said)
    deltas = [e.delta for e in seen if type(e).__name__ == "AudioTranscriptDelta"]
    assert "".join(deltas).strip() == said


def test_a_primed_prompt_is_the_early_answers_with_the_words_heard_so_far() -> None:
    """Responses.prime hands the LLM the prompt the answer to those words would have (the
    instructions, the conversation, the pending words as the user's), once at a time, and
    never while an answer runs; the conversation is left as it was."""

    async def main() -> tuple[ScriptedLLM, list[list[str]], int]:
        hold = asyncio.Event()
        llm = ScriptedLLM(["Paris."], hold=hold)
        conversation = Conversation()
        conversation.add(Item(id="user1", role="user", text="Hello."))
        conversation.add(Item(id="answer1", role="assistant", text="Hi, how can I help?"))
        responses = Responses(
            SessionConfig.default(Settings(), llm.model), _deps(conversation, llm, print)
        )
        responses.prime("What is the capital of", "en")
        responses.prime("What is the capital of France", "en")  # the first still computes
        await asyncio.sleep(0.01)
        responses.prime("What is the capital of France", "en")
        await asyncio.sleep(0.01)
        responses.start(early_user_text="What is the capital of France?", early_language="en")
        await llm.opened.wait()
        responses.prime("Never mind", "en")  # an answer runs
        await asyncio.sleep(0.01)
        hold.set()
        prompts = [[f"{m.role}: {m.content}" for m in p] for p in [*llm.primed, *llm.prompts]]
        await responses.close()
        return llm, prompts, len(conversation.items)

    llm, prompts, items = asyncio.run(main())
    assert len(llm.primed) == 2 and items == 2
    *head, last = prompts[-1]  # the answer's own prompt
    assert last == "user: What is the capital of France?"
    assert prompts[0] == [*head, "user: What is the capital of"]
    assert prompts[1] == [*head, "user: What is the capital of France"]
    assert head[0].startswith("system: ") and head[1:] == [
        "user: Hello.",
        "assistant: Hi, how can I help?",
    ]


def test_a_prime_leaves_a_conversation_over_its_budget_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A history the answer would cut is not primed (its cut is the answer's to make),
    and priming drops nothing from the conversation."""

    async def main() -> tuple[ScriptedLLM, int]:
        llm = ScriptedLLM(context_length=300)
        conversation = Conversation()
        for i in range(40):
            conversation.add(Item(id=f"user{i}", role="user", text="word " * 20))
        responses = Responses(
            SessionConfig.default(Settings(), llm.model), _deps(conversation, llm, print)
        )
        responses.prime("And one more thing", "en")
        await asyncio.sleep(0.05)
        await responses.close()
        return llm, len(conversation.items)

    llm, items = asyncio.run(main())
    assert llm.primed == [] and items == 40
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # skipped, not failed


def test_an_answer_starting_stops_the_prime_still_running() -> None:
    """What the prime computed stays cached; the rest the answer computes itself, not
    twice beside it. Closing the session stops a prime too."""

    async def main() -> tuple[ScriptedLLM, ScriptedLLM]:
        llm, other = ScriptedLLM(["Paris."]), ScriptedLLM(["Paris."])
        for scripted in (llm, other):
            scripted.prime_hold = asyncio.Event()
        config = SessionConfig.default(Settings(), llm.model)
        responses = Responses(config, _deps(Conversation(), llm, print))
        responses.prime("What is the capital of", "en")
        await asyncio.sleep(0.01)
        responses.start(early_user_text="What is the capital of France?", early_language="en")
        await asyncio.sleep(0.01)
        await responses.close()
        closing = Responses(config, _deps(Conversation(), other, print))
        closing.prime("What is the capital of", "en")
        await asyncio.sleep(0.01)
        await closing.close()
        await asyncio.sleep(0.01)
        return llm, other

    llm, other = asyncio.run(main())
    assert (len(llm.primed), llm.primes_cancelled, len(llm.prompts)) == (1, 1, 1)
    assert (len(other.primed), other.primes_cancelled) == (1, 1)


def test_a_backend_that_cannot_prime_is_not_asked() -> None:
    """The remote and transformers backends keep no prefix cache of ours: no prompt is
    built for them every second."""

    async def main() -> ScriptedLLM:
        llm = ScriptedLLM()
        llm.primes = False
        conversation = Conversation()
        conversation.add(Item(id="user1", role="user", text="Hello."))
        responses = Responses(
            SessionConfig.default(Settings(), llm.model), _deps(conversation, llm, print)
        )
        responses.prime("What is the capital of", "en")
        await asyncio.sleep(0.01)
        await responses.close()
        return llm

    assert asyncio.run(main()).primed == []
