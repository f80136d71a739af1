"""One response driven alone (scripted LLM and TTS): the exact events out, how it ends,
and that the LLM request is closed whatever happens."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
from collections.abc import AsyncGenerator
from typing import Any

from app.llm import ChatMessage, GenerationParams, LLMBackendError, LLMDelta
from app.protocol.server_events import (
    AudioDelta,
    AudioDone,
    AudioTranscriptDelta,
    AudioTranscriptDone,
    ContentPartAdded,
    ContentPartDone,
    Error,
    ItemCreated,
    ItemDone,
    OutputItemAdded,
    OutputItemDone,
    RateLimitsUpdated,
    ResponseCreated,
    ResponseDone,
    ServerEvent,
    TextDelta,
    TextDone,
    TurnMetrics,
)
from app.protocol.session_schema import AudioFormat
from app.realtime.conversation import Conversation, Item
from app.realtime.handoff import TurnTiming
from app.realtime.responses.generation import idle_note
from app.realtime.responses.response import Response
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome, ResponseSpec
from tests.app.realtime.harness import Harness as RealtimeHarness
from tests.fakes import ScriptedLLM, ScriptedVoices

COMMON_START = [
    ResponseCreated,
    OutputItemAdded,
    ItemCreated,
    ContentPartAdded,
]


class Harness(RealtimeHarness):
    """One response over a scripted LLM and TTS, after a user's question."""

    def __init__(
        self,
        llm: ScriptedLLM,
        audio: bool = False,
        early: str | None = None,
        voices: ScriptedVoices | None = None,
        max_tokens: int = 16,
        idle_ms: int | None = None,
    ) -> None:
        super().__init__()
        self.llm = llm
        self.outcomes: list[ResponseOutcome] = []
        self.conversation = Conversation()
        self.conversation.add(Item(id="user1", role="user", text="What is it?"))
        self.voices = voices or ScriptedVoices(seconds_per_clause=0.2)
        deps = ResponseDeps(
            sink=self.emit,
            conversation=self.conversation,
            llm=llm,
            voices=self.voices,
            audio_lead_ms=10_000,
        )
        spec = ResponseSpec(
            audio=audio,
            instructions="be brief",
            params=GenerationParams(max_tokens=max_tokens),
            voice="scripted",
            speed=1.0,
            output_format=AudioFormat(),
            early_user_text=early,
            idle_ms=idle_ms,
        )
        self.response = Response(spec, deps, TurnTiming(0.0, 0.0), self._done)
        self.finished = asyncio.Event()  # the response reported its end

    def _done(self, _response: Response, outcome: ResponseOutcome) -> None:
        self.outcomes.append(outcome)
        self.finished.set()


async def run_to_end(h: Harness) -> None:
    h.response.start()
    await h.finished.wait()


def test_an_idle_nudge_ends_the_prompt_with_a_note_kept_out_of_the_conversation() -> None:
    h = Harness(ScriptedLLM(["Are you still there?"]), idle_ms=5000)
    h.conversation.add(Item(id="answer1", role="assistant", text="It is blue."))
    h.conversation.add(Item(id="silence1", role="user", text="", audio=True))  # nothing said
    asyncio.run(run_to_end(h))
    assert h.llm.prompts == [
        [
            ChatMessage("system", "be brief"),
            ChatMessage("user", "What is it?"),
            ChatMessage("assistant", "It is blue."),
            ChatMessage("user", idle_note(5000)),
        ]
    ]
    assert "said nothing for 5 seconds" in idle_note(5000)
    texts = [item.text for item in h.conversation.items]
    assert texts == ["What is it?", "It is blue.", "", "Are you still there?"]


def test_text_response_events_in_order() -> None:
    h = Harness(ScriptedLLM(["Hello ", "there."]))
    asyncio.run(run_to_end(h))
    assert h.types == [
        *COMMON_START,
        RateLimitsUpdated,
        TextDelta,
        TextDelta,
        TextDone,
        ContentPartDone,
        OutputItemDone,
        ItemDone,
        ResponseDone,
        TurnMetrics,
    ]
    assert [e["delta"] for e in h.events if isinstance(e, TextDelta)] == [
        "Hello ",
        "there.",
    ]
    done = h.events[h.types.index(ResponseDone)]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"] == [{"type": "text", "text": "Hello there."}]
    assert h.events[0]["response"]["usage"] is None  # response.created: nothing counted yet
    # OpenAI's shape (GA; beta's is a subset): the prompt is "be brief" + "What is it?", 5
    # words, so 5 tokens to the scripted LLM; 2 generated; every token a text token
    assert done["usage"] == {
        "total_tokens": 7,
        "input_tokens": 5,
        "output_tokens": 2,
        "input_token_details": {
            "text_tokens": 5,
            "audio_tokens": 0,
            "image_tokens": 0,
            "cached_tokens": 0,
            "cached_tokens_details": {"text_tokens": 0, "audio_tokens": 0, "image_tokens": 0},
        },
        "output_token_details": {"text_tokens": 2, "audio_tokens": 0},
    }
    assert h.events[2]["previous_item_id"] == "user1"
    (limit,) = h.events[h.types.index(RateLimitsUpdated)]["rate_limits"]
    prompt_and_reserve = h.llm.context_length - limit["remaining"]
    assert limit["name"] == "tokens" and limit["limit"] == h.llm.context_length
    assert h.response.spec.params.max_tokens < prompt_and_reserve < 200  # the prompt is tiny
    assert h.llm.prompts == [
        [ChatMessage("system", "be brief"), ChatMessage("user", "What is it?")]
    ]
    assert h.conversation.items[-1].text == "Hello there."
    assert h.outcomes == [ResponseOutcome("completed", True, h.outcomes[0].stage_seconds)]
    assert h.llm.running == set()


def test_audio_response_speaks_each_clause() -> None:
    h = Harness(ScriptedLLM(["Hello ", "there."]), audio=True)
    asyncio.run(run_to_end(h))
    assert h.types == [
        *COMMON_START,
        RateLimitsUpdated,
        AudioTranscriptDelta,
        AudioTranscriptDelta,
        AudioDelta,
        AudioDelta,
        AudioDone,
        AudioTranscriptDone,
        ContentPartDone,
        OutputItemDone,
        ItemDone,
        ResponseDone,
        TurnMetrics,
    ]
    audio = b"".join(base64.b64decode(e["delta"]) for e in h.events if isinstance(e, AudioDelta))
    assert len(audio) == 2 * int(0.2 * 24_000)  # PCM16 of the one 0.2 s clause
    assert h.voices.spoken == ["Hello there."]
    assert h.response.text_played(h.response.audio_ms) == "Hello there."


class BrokenVoices(ScriptedVoices):
    async def speak(
        self,
        text: str,
        out_rate: int,
        speed: float,
        voice: str,
        slack_s: float = 0.0,
        first: bool = False,
    ) -> Any:
        raise RuntimeError("the voice model crashed")


def test_a_tts_failure_leaves_a_text_only_answer() -> None:
    """Bug: a TTS failure failed the whole answer; now its words still arrive."""
    h = Harness(ScriptedLLM(["Hello ", "there."]), audio=True, voices=BrokenVoices())
    asyncio.run(run_to_end(h))
    (error,) = [e["error"] for e in h.events if isinstance(e, Error)]
    assert error["code"] == "tts_failed" and "text only" in error["message"]
    done = h.events[h.types.index(ResponseDone)]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0]["transcript"] == "Hello there."
    assert AudioDelta not in h.types
    assert h.conversation.items[-1].text == "Hello there."


def test_unexpected_failure_is_reported_failed_not_completed() -> None:
    """Bug: an exception other than three known types ended as status `completed`."""
    h = Harness(ScriptedLLM(fail=RuntimeError("boom")))
    asyncio.run(run_to_end(h))
    assert h.types == [
        *COMMON_START,
        RateLimitsUpdated,
        Error,
        TextDone,
        ContentPartDone,
        OutputItemDone,
        ItemDone,
        ResponseDone,
        TurnMetrics,
    ]
    error = h.events[h.types.index(Error)]["error"]
    assert (error["code"], error["type"]) == ("server_error", "server_error")
    assert "boom" in error["message"]
    done = h.events[h.types.index(ResponseDone)]["response"]
    assert done["status"] == "failed" and done["status_details"]["error"]["code"] == "server_error"
    assert done["output"][0]["status"] == "incomplete"
    assert h.outcomes[0].status == "failed"


def test_backend_refusal_keeps_its_code() -> None:
    """Bug: a prompt too long for the context was typed `server_error` (the client's to
    fix, not the server's) and its error did not name the client's `response.create`."""
    refusal = LLMBackendError("conversation too long", code="context_length_exceeded")
    h = Harness(ScriptedLLM(fail=refusal))
    h.response.spec = dataclasses.replace(h.response.spec, event_id="evt_create")
    asyncio.run(run_to_end(h))
    error = h.events[h.types.index(Error)]["error"]
    assert (error["code"], error["type"]) == ("context_length_exceeded", "invalid_request_error")
    assert error["event_id"] == "evt_create"
    assert h.events[h.types.index(ResponseDone)]["response"]["status"] == "failed"


def test_cancel_closes_the_llm_request() -> None:
    async def main(h: Harness) -> None:
        h.response.start()
        await h.llm.opened.wait()
        await h.response.cancel("turn_detected")

    h = Harness(ScriptedLLM(hold=asyncio.Event()))
    asyncio.run(main(h))
    done = h.events[h.types.index(ResponseDone)]["response"]
    assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
    assert done["usage"] is None  # the closed stream never gave its counts
    assert h.llm.running == set()  # the stream was closed, so the engine request aborted
    assert h.outcomes[0].status == "cancelled"


def test_only_an_answers_first_clause_is_spoken_as_its_first() -> None:
    """The first clause is what the listener waits for (the TTS has the LLM give way to
    it: app/speech/voices.py); later ones are not, however little audio is queued."""
    words = ["The capital of France ", "is Paris. ", "It is a large city, ", "on the Seine."]
    h = Harness(ScriptedLLM(words), audio=True)
    asyncio.run(run_to_end(h))
    assert len(h.voices.spoken) >= 2
    assert h.voices.firsts == [True] + [False] * (len(h.voices.spoken) - 1)


def test_an_answer_cut_at_max_output_tokens_is_incomplete_and_spoken_whole() -> None:
    """Bug: an answer cut by its token limit said `completed` and had no usage."""
    h = Harness(ScriptedLLM(["One, ", "two, ", "three, ", "four."]), audio=True, max_tokens=3)
    asyncio.run(run_to_end(h))
    done = h.events[h.types.index(ResponseDone)]["response"]
    assert done["status"] == "incomplete"
    assert done["status_details"] == {"type": "incomplete", "reason": "max_output_tokens"}
    assert done["usage"]["output_tokens"] == 3 and done["usage"]["input_tokens"] == 5
    assert done["output"][0]["status"] == "incomplete"
    assert done["output"][0]["content"] == [{"type": "audio", "transcript": "One, two, three, "}]
    (item_done,) = [e["item"] for e in h.events if isinstance(e, ItemDone)]
    assert (item_done["status"], h.conversation.items[-1].status) == ("incomplete", "incomplete")
    assert h.conversation.items[-1].text == "One, two, three, "  # all of it stays
    assert "".join(h.voices.spoken) == "One, two, three,"  # all of it was spoken
    assert h.outcomes[0].status == "incomplete" and h.outcomes[0].reason is None
    metrics = h.events[h.types.index(TurnMetrics)]
    assert metrics["status"] == "incomplete"


def test_cached_prompt_tokens_are_reported() -> None:
    h = Harness(ScriptedLLM(["Fine."], cached_tokens=4))
    asyncio.run(run_to_end(h))
    details = h.events[h.types.index(ResponseDone)]["response"]["usage"]["input_token_details"]
    assert details["cached_tokens"] == 4 and details["cached_tokens_details"]["text_tokens"] == 4
    assert details["text_tokens"] == 5  # the whole prompt, the cached part included


class HeldVoices(ScriptedVoices):
    """Speaks nothing until `go` is set: the answer is generated, its speech still pending."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def speak(
        self,
        text: str,
        out_rate: int,
        speed: float,
        voice: str,
        slack_s: float = 0.0,
        first: bool = False,
    ) -> Any:
        await self.go.wait()
        return await super().speak(text, out_rate, speed, voice, slack_s, first)


def test_an_answer_cancelled_after_its_generation_reports_its_tokens() -> None:
    """Barge-in once the LLM has finished (the answer still being spoken): the backend gave
    its counts, so the cancelled response reports them, as OpenAI reports usage for
    cancelled responses too."""

    class EndingLLM(ScriptedLLM):
        def __init__(self) -> None:
            super().__init__(["Hello ", "there."])
            self.ended = asyncio.Event()  # set once the final delta was taken

        async def stream_chat(
            self, messages: list[ChatMessage], params: GenerationParams, request_id: str
        ) -> AsyncGenerator[LLMDelta, None]:
            async for delta in super().stream_chat(messages, params, request_id):
                yield delta
            self.ended.set()

    async def main(h: Harness, llm: EndingLLM) -> None:
        h.response.start()
        await llm.ended.wait()
        await h.response.cancel("turn_detected")

    llm = EndingLLM()
    h = Harness(llm, audio=True, voices=HeldVoices())
    asyncio.run(main(h, llm))
    done = h.events[h.types.index(ResponseDone)]["response"]
    assert done["status"] == "cancelled"
    assert (done["usage"]["input_tokens"], done["usage"]["output_tokens"]) == (5, 2)


def test_cancel_before_the_first_step_still_reports() -> None:
    async def main(h: Harness) -> None:
        h.response.start()
        await h.response.cancel()  # the task has not run a single step yet

    h = Harness(ScriptedLLM())
    asyncio.run(main(h))
    assert h.types == [
        *COMMON_START,
        TextDone,
        ContentPartDone,
        OutputItemDone,
        ItemDone,
        ResponseDone,
        TurnMetrics,
    ]
    assert h.events[h.types.index(ResponseDone)]["response"]["status"] == "cancelled"


class SlowCleanupLLM(ScriptedLLM):
    """Its stream takes a while to close: the response's unwinding waits for it."""

    def __init__(self) -> None:
        super().__init__(hold=asyncio.Event())
        self.closed = asyncio.Event()

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        try:
            async for delta in super().stream_chat(messages, params, request_id):
                yield delta
        finally:
            await asyncio.shield(self.closed.wait())


def test_cancel_does_not_swallow_the_callers_own_cancellation() -> None:
    """Bug: Response.cancel suppressed CancelledError, including the caller's."""

    async def main(h: Harness, llm: SlowCleanupLLM) -> bool:
        h.response.start()
        await llm.opened.wait()
        caller = asyncio.create_task(h.response.cancel())
        await asyncio.sleep(0.01)  # the caller now waits for the response to unwind
        caller.cancel()
        await asyncio.wait([caller])
        llm.closed.set()
        await h.finished.wait()
        return caller.cancelled()

    llm = SlowCleanupLLM()
    h = Harness(llm)
    assert asyncio.run(main(h, llm)) is True
    assert h.events[h.types.index(ResponseDone)]["response"]["status"] == "cancelled"


def test_early_answer_is_unseen_until_released() -> None:
    async def main(h: Harness) -> list[type[ServerEvent]]:
        h.response.start()
        for _ in range(50):
            await asyncio.sleep(0.001)
        before = list(h.types)
        h.response.release(TurnTiming(0.0, 0.0), "user1")
        await h.finished.wait()
        return before

    h = Harness(ScriptedLLM(["Fine."]), early="how are you")
    assert asyncio.run(main(h)) == []  # nothing was seen while it was held
    assert h.types[:4] == COMMON_START and h.types[-2] == ResponseDone
    assert h.llm.prompts[0][-1] == ChatMessage("user", "how are you")


def test_discarded_early_answer_leaves_no_trace() -> None:
    async def main(h: Harness) -> None:
        h.response.start()
        await asyncio.sleep(0.01)
        await h.response.discard()

    h = Harness(ScriptedLLM(["Fine."]), early="how are")
    asyncio.run(main(h))
    assert h.events == []
    assert h.outcomes == [ResponseOutcome("discarded", False, None)]
    assert [i.id for i in h.conversation.items] == ["user1"]
