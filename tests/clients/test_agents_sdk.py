"""OpenAI's Agents SDK for Python (`openai-agents`): a RealtimeAgent run by RealtimeRunner
with its default settings, pointed at r1voice by URL only, over a real socket."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pydantic
import pytest
from agents import function_tool
from agents.realtime import RealtimeAgent, RealtimeRunner, RealtimeSession
from agents.realtime.openai_realtime import get_server_event_type_adapter

from app.audio import PROTOCOL_RATE
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.clients.conftest import (
    BARGE_IN_S,
    GA_QUERY,
    LONG_ANSWER,
    SHORT_ANSWER,
    ScriptedServer,
    speech_pcm,
)

# websockets' legacy module, imported by the SDK's dependencies, warns on import.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TIMEOUT_S = 180  # generous: two shared CPU cores run ASR and TTS for every turn


def run_async(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test in its own event loop (no pytest asyncio plugin needed)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return wrapper


class Recorder:
    """Consumes a RealtimeSession's events in the background; keeps them and the raw
    server events (as the server sent them) for assertions."""

    def __init__(self, session: RealtimeSession) -> None:
        self.session = session
        self.events: list[Any] = []
        self.raw: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self.session:
            self.events.append(event)
            if event.type == "raw_model_event" and event.data.type == "raw_server_event":
                self.raw.append(event.data.data)
            self._changed.set()

    async def wait(self, stop: Callable[[Any], bool], after: int = 0) -> Any:
        """The first session event from index `after` on for which `stop` is true."""

        async def scan() -> Any:
            while True:
                for event in self.events[after:]:
                    if stop(event):
                        return event
                if self._task.done():
                    self._task.result()
                    raise AssertionError("the session ended first")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), TIMEOUT_S)

    async def wait_raw(self, kind: str, after: int = 0) -> dict[str, Any]:
        """The first raw server event of type `kind` from raw index `after` on."""
        await self.wait(lambda _: any(e["type"] == kind for e in self.raw[after:]))
        return next(e for e in self.raw[after:] if e["type"] == kind)

    def errors(self, extensions: bool = False) -> list[str]:
        """What the SDK reported as errors: server `error` events and the server events it
        failed to validate; those of our `r1voice.*` extension events only if `extensions`
        (see test_extension_events_are_not_reported_as_errors)."""
        return [
            str(e.error)[-300:]
            for e in self.events
            if e.type == "error" and (extensions or "Input tag 'r1voice." not in str(e.error))
        ]

    def refused(self, extensions: bool = False) -> list[str]:
        """The raw server events the SDK's own validation refuses (each becomes an error)."""
        adapter = get_server_event_type_adapter()
        bad = []
        for event in self.raw:
            if event["type"].startswith("r1voice.") and not extensions:
                continue
            try:
                adapter.validate_python(event)
            except pydantic.ValidationError as exc:
                bad.append(f"{event['type']}: {str(exc).splitlines()[1:3]}")
        return bad

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@contextlib.asynccontextmanager
async def agent_session(address: str, agent: RealtimeAgent) -> AsyncIterator[Recorder]:
    """The SDK's defaults; only the URL (and a placeholder key) point it at r1voice."""
    runner = RealtimeRunner(agent)
    model_config = {"url": f"ws://{address}/v1/realtime{GA_QUERY}", "api_key": "sk-test"}
    async with await runner.run(model_config=model_config) as session:  # type: ignore[arg-type]
        recorder = Recorder(session)
        try:
            # the SDK's initial session.update (its defaults: semantic_vad, audio out,
            # gpt-4o-mini-transcribe, voice "ash") is answered before anything else
            updated = await recorder.wait_raw("session.updated")
            assert updated["session"]["audio"]["input"]["turn_detection"] is not None
            yield recorder
        finally:
            await recorder.stop()


def assistant_items(recorder: Recorder) -> list[Any]:
    return [i for i in recorder.session._history if getattr(i, "role", None) == "assistant"]


def last_answer(recorder: Recorder) -> str:
    """The transcript of the last assistant item in the SDK's history ("" if none)."""
    answers = [i for i in recorder.session._history if getattr(i, "role", None) == "assistant"]
    return transcript(answers[-1]) if answers else ""


def transcript(item: Any) -> str:
    return "".join(
        (getattr(part, "transcript", None) or getattr(part, "text", None) or "")
        for part in item.content
    )


async def send_pcm(session: RealtimeSession, pcm: bytes, realtime: bool = False) -> None:
    step = PROTOCOL_RATE * 2 // 50  # 20 ms of PCM16
    for i in range(0, len(pcm), step):
        await session.send_audio(pcm[i : i + step])
        if realtime:
            await asyncio.sleep(0.02)


def agent() -> RealtimeAgent:
    return RealtimeAgent(name="Assistant", instructions="Answer in one short sentence.")


@pytest.mark.timeout(600)
@run_async
async def test_text_turn(scripted_server: ScriptedServer) -> None:
    with scripted_server(SHORT_ANSWER) as address:
        async with agent_session(address, agent()) as recorder:
            await recorder.session.send_message("What is the capital of France?")
            await recorder.wait(lambda e: e.type == "agent_end")
            done = await recorder.wait_raw("response.done")
            history = list(recorder.session._history)
    assert done["response"]["status"] == "completed"
    assert recorder.refused() == []
    assert recorder.errors() == []
    user = next(i for i in history if getattr(i, "role", None) == "user")
    assert user.content[0].text == "What is the capital of France?"
    (answer,) = (i for i in history if getattr(i, "role", None) == "assistant")
    assert answer.status == "completed"
    assert transcript(answer) == "".join(SHORT_ANSWER)
    assert any(e.type == "audio" for e in recorder.events)  # the default is spoken answers
    assert invalid_events(recorder.raw) == []


@pytest.mark.timeout(600)
@run_async
async def test_audio_turn(scripted_server: ScriptedServer) -> None:
    with scripted_server(SHORT_ANSWER) as address:
        async with agent_session(address, agent()) as recorder:
            await send_pcm(recorder.session, speech_pcm())
            # A client this much faster than real time gets the turn model's verdict alone
            # at each pause, and it hears JFK's "And so, my fellow Americans" finished:
            # that part may be a turn of its own (answered, or merged away; ~1 run in 6)
            # before the one that holds the end of the sentence, whose answer is followed.
            await recorder.wait(lambda _: _transcript_ending(recorder.raw, "country") is not None)
            transcribed = _transcript_ending(recorder.raw, "country")
            assert transcribed is not None
            n = len(recorder.events)
            # The end of an answer to the sentence's end, heard: an answer to its first
            # part may end after that turn's transcript too, cut before any of its audio
            # (its agent_end once left the right answer in progress, in CI).
            whole = "".join(SHORT_ANSWER)
            item_id = transcribed["item_id"]
            await recorder.wait(
                lambda e: e.type == "agent_end" and _heard_answer_after(recorder, item_id, whole),
                after=n,
            )
            history = list(recorder.session._history)
    assert recorder.refused() == []
    assert recorder.errors() == []
    at = next(i for i, item in enumerate(history) if item.item_id == transcribed["item_id"])
    assert "country" in transcript(history[at]).lower()  # the SDK's history has the transcript
    # the last answer is the one to the whole sentence: an answer to its first part, cut
    # where it was heard (often before any of it: an empty transcript), may come after the
    # turn's item in the SDK's history (seen once in a suite run)
    answers = [i for i in history[at:] if getattr(i, "role", None) == "assistant"]
    assert answers and transcript(answers[-1]) == whole
    assert all(whole.startswith(transcript(a)) for a in answers), answers
    audio = b"".join(e.audio.data for e in recorder.events if e.type == "audio")
    assert len(audio) / 2 / PROTOCOL_RATE >= 0.5, " ".join(_story(recorder))
    assert invalid_events(recorder.raw) == []


def _story(recorder: Recorder) -> list[str]:
    """The SDK's events and the server's (with what each turn was heard as), in order,
    for a failure's message."""
    story = []
    for e in recorder.events:
        if e.type != "raw_model_event":
            story.append(e.type)
        elif e.data.type == "raw_server_event":
            raw = e.data.data
            heard = (
                raw.get("transcript") if raw["type"].endswith("transcription.completed") else None
            )
            story.append(raw["type"] + ("" if heard is None else f"({heard!r})"))
    return story


def _heard_answer_after(recorder: Recorder, item_id: str, text: str) -> bool:
    """Whether an assistant item after `item_id` in the SDK's history says `text` and
    brought at least 0.5 s of audio."""
    history = list(recorder.session._history)
    at = next((i for i, item in enumerate(history) if item.item_id == item_id), None)
    if at is None:
        return False
    for item in history[at:]:
        if getattr(item, "role", None) != "assistant" or transcript(item) != text:
            continue
        pcm = b"".join(
            e.audio.data for e in recorder.events if e.type == "audio" and e.item_id == item.item_id
        )
        if len(pcm) / 2 / PROTOCOL_RATE >= 0.5:
            return True
    return False


def _transcript_ending(raw: list[dict[str, Any]], word: str) -> dict[str, Any] | None:
    """The first completed input transcription whose last word is `word`."""
    done = "conversation.item.input_audio_transcription.completed"
    return next(
        (
            e
            for e in raw
            if e["type"] == done and e["transcript"].lower().rstrip(" .!?,").split()[-1:] == [word]
        ),
        None,
    )


@pytest.mark.timeout(600)
@run_async
async def test_barge_in_truncates_the_answer_while_it_plays(
    scripted_server: ScriptedServer,
) -> None:
    """The user speaks while the answer plays: the server's speech_started makes the SDK
    stop playback and send conversation.item.truncate for what it had played."""
    with scripted_server(LONG_ANSWER) as address:
        async with agent_session(address, agent()) as recorder:
            await recorder.session.send_message("Tell me a long story.")
            first_audio = await recorder.wait(lambda e: e.type == "audio")
            answer_id = first_audio.item_id
            await send_pcm(recorder.session, speech_pcm(BARGE_IN_S), realtime=True)
            await recorder.wait(lambda e: e.type == "audio_interrupted")
            truncated = await recorder.wait_raw("conversation.item.truncated")
            # the SDK retrieves the item after the truncation; then the barge-in is answered
            await recorder.wait_raw("conversation.item.retrieved")
            await recorder.wait_raw("conversation.item.input_audio_transcription.completed")
            n = len(recorder.events)
            await recorder.wait(lambda e: e.type == "agent_end", after=n)
            history = list(recorder.session._history)
    raw_errors = [e for e in recorder.raw if e["type"] == "error"]
    assert raw_errors == []  # the truncate was accepted
    assert recorder.refused() == []
    assert recorder.errors() == []
    assert truncated["item_id"] == answer_id
    first_done = next(e for e in recorder.raw if e["type"] == "response.done")
    assert first_done["response"]["status"] == "cancelled"
    interrupted = next(i for i in history if i.item_id == answer_id)
    assert interrupted.status == "incomplete"
    full = "".join(LONG_ANSWER)
    heard = transcript(interrupted)
    assert full.startswith(heard) and len(heard) < len(full)  # what was heard, no more
    assert heard == truncated_transcript(recorder.raw, answer_id)
    assert invalid_events(recorder.raw) == []


def truncated_transcript(raw: list[dict[str, Any]], item_id: str) -> str:
    """The assistant item's transcript as the server holds it after the truncation."""
    retrieved = [
        e for e in raw if e["type"] == "conversation.item.retrieved" and e["item"]["id"] == item_id
    ]
    return retrieved[-1]["item"]["content"][0].get("transcript") or ""


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"It is sunny in {city}."


@pytest.mark.timeout(600)
@run_async
async def test_tool_call_round_trip(scripted_server: ScriptedServer) -> None:
    """The model calls the agent's tool; the SDK runs it, sends the function_call_output
    and a response.create, and the answer that uses the result follows."""
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    weather_agent = RealtimeAgent(
        name="Assistant", instructions="Use your tools.", tools=[get_weather]
    )
    with scripted_server([call], ["It is sunny ", "in Paris."]) as address:
        async with agent_session(address, weather_agent) as recorder:
            await recorder.session.send_message("What is the weather in Paris?")
            end = await recorder.wait(lambda e: e.type == "tool_end")
            n = len(recorder.events)
            await recorder.wait(lambda e: e.type == "agent_end", after=n)
            # the SDK may fill the answer's transcript into its history after agent_end
            # (a later history_updated): wait for it rather than race it
            await recorder.wait(lambda _: last_answer(recorder) == "It is sunny in Paris.", n)
            history = list(recorder.session._history)
    assert end.tool.name == "get_weather" and end.output == "It is sunny in Paris."
    calls = [i for i in history if i.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    answers = [i for i in history if getattr(i, "role", None) == "assistant"]
    assert transcript(answers[-1]) == "It is sunny in Paris."
    assert "<tool_call>" not in "".join(transcript(a) for a in answers)  # never spoken
    assert recorder.refused() == []
    assert recorder.errors() == []
    assert invalid_events(recorder.raw) == []


@pytest.mark.timeout(600)
@run_async
async def test_extension_events_are_not_reported_as_errors(
    scripted_server: ScriptedServer,
) -> None:
    with scripted_server(SHORT_ANSWER) as address:
        async with agent_session(address, agent()) as recorder:
            await send_pcm(recorder.session, speech_pcm())
            await recorder.wait(lambda e: e.type == "agent_end")
    assert recorder.refused(extensions=True) == []
    assert recorder.errors(extensions=True) == []
