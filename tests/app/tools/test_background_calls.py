"""A tool call that takes longer than a moment goes on in the background: the answer says
"Let me check that." once and ends, the user's next question is answered meanwhile, and
when the call is done the server answers with its result on its own (the `mcp_call`
item stays where the call was made; the result's answer reads it there)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import numpy as np
import pytest

from app.audio import PROTOCOL_RATE
from app.llm import ChatMessage, GenerationParams, LLMDelta
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.mcp_servers import SLOW_S, mcp_server
from tests.app.tools.test_mcp_realtime import Session, mcp_tool, types
from tests.conftest import append_event, load_clip, receive_until
from tests.fakes import ScriptedLLM


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


def tagged(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def text(events: list[dict[str, Any]]) -> str:
    said = ("response.output_text.delta", "response.output_audio_transcript.delta")
    return "".join(e["delta"] for e in events if e["type"] in said)


def test_a_slow_call_is_answered_when_done_while_the_conversation_goes_on(
    shared_components: Any, weather_url: str
) -> None:
    scripts = [[tagged("get_forecast", city="Rome")], ["Hi there."], ["Rain tomorrow in Rome."]]
    with Session(shared_components, scripts, "http://127.0.0.1:", background_after_s=0.3) as s:
        s.tools([mcp_tool(weather_url, require_approval="never")], "conversation.item.done")
        first = s.ask("Will it rain tomorrow in Rome?")
        second = s.ask("Hello?")
        late = s.until("response.done")
    assert text(first) == "Let me check that."
    assert first[-1]["response"]["status"] == "completed"
    (call,) = [o for o in first[-1]["response"]["output"] if o["type"] == "mcp_call"]
    assert call["output"] is None  # still running when the answer ended
    assert "response.mcp_call.completed" not in types(first + second)
    assert text(second) == "Hi there."
    done = types(late).index("response.mcp_call.completed")
    assert done < types(late).index("response.created")
    finished = next(e["item"] for e in late if e["type"] == "conversation.item.done")
    assert finished["id"] == call["id"] and finished["output"] == "Rain tomorrow in Rome."
    assert text(late) == "Rain tomorrow in Rome."
    prompt = s.llm.prompts[2]
    assert prompt[-1].role == "user" and "get_forecast" in prompt[-1].content  # the note
    assert any("It answered: Rain tomorrow in Rome." in m.content for m in prompt)
    assert invalid_events(s.seen) == []


def test_a_quick_call_is_answered_in_the_same_response(
    shared_components: Any, weather_url: str
) -> None:
    scripts = [[tagged("get_weather", city="Rome")], ["Sunny in Rome."]]
    with Session(shared_components, scripts, "http://127.0.0.1:", background_after_s=1.5) as s:
        s.tools([mcp_tool(weather_url, require_approval="never")], "conversation.item.done")
        answer = s.ask("Weather in Rome?")
    assert text(answer) == "Sunny in Rome."
    assert "response.mcp_call.completed" in types(answer)


def test_an_entry_that_says_wait_is_waited_for(shared_components: Any, weather_url: str) -> None:
    scripts = [[tagged("get_forecast", city="Rome")], ["Rain tomorrow in Rome."]]
    entry = mcp_tool(weather_url, require_approval="never", r1voice={"background_after_s": 0})
    with Session(shared_components, scripts, "http://127.0.0.1:", background_after_s=0.3) as s:
        s.tools([entry], "conversation.item.done")
        answer = s.ask("Will it rain tomorrow in Rome?")
    assert text(answer) == "Rain tomorrow in Rome."  # no "Let me check that."
    assert "response.mcp_call.completed" in types(answer)


def test_never_mind_cancels_a_call_running_in_the_background(
    shared_components: Any, weather_url: str
) -> None:
    scripts = [[tagged("get_forecast", city="Rome")], ["Okay, cancelled."], ["Hi."]]
    with Session(shared_components, scripts, "http://127.0.0.1:", background_after_s=0.3) as s:
        s.tools([mcp_tool(weather_url, require_approval="never")], "conversation.item.done")
        first = s.ask("Will it rain tomorrow in Rome?")
        cancelled = s.ask("Never mind.")
        time.sleep(SLOW_S + 0.5)  # past the tool's latency: its result would have come
        after = s.ask("Hello?")
    (call,) = [o for o in first[-1]["response"]["output"] if o["type"] == "mcp_call"]
    failed = next(e for e in cancelled if e["type"] == "response.mcp_call.failed")
    assert failed["item_id"] == call["id"]
    item = next(
        e["item"]
        for e in cancelled
        if e["type"] == "conversation.item.done" and e["item"]["type"] == "mcp_call"
    )
    assert item["error"]["message"] == "the user cancelled the call"
    assert "cancelled the get_forecast call" in s.llm.prompts[1][-1].content
    assert text(cancelled) == "Okay, cancelled."
    assert len(s.llm.prompts) == 3  # the cancelled call's result was never answered
    assert "response.mcp_call.completed" not in types(after)
    assert invalid_events(s.seen) == []


class Caller(ScriptedLLM):
    """Calls get_forecast when typed to, says "Go on." to a spoken turn, and answers the
    result once its note ends the prompt."""

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        last = messages[-1].content
        if "The tools have answered" in last:
            self.scripts = [["Rain tomorrow in Rome."]]
        elif "Rome" in last:
            self.scripts = [[tagged("get_forecast", city="Rome")]]
        else:
            self.scripts = [["Go on."]]
        async for delta in super().stream_chat(messages, params, request_id):
            yield delta


def test_a_result_that_comes_mid_sentence_is_answered_after_it(
    shared_components: Any, weather_url: str
) -> None:
    session = Session(shared_components, [], "http://127.0.0.1:", 5.0, 0.3, llm=Caller())
    with session as s:
        s.tools([mcp_tool(weather_url, require_approval="never")], "conversation.item.done")
        s.ask("Will it rain tomorrow in Rome?")
        speech = np.concatenate(
            [
                np.zeros(PROTOCOL_RATE // 4, np.float32),
                load_clip("jfk.flac")[: PROTOCOL_RATE * 22 // 10],
            ]
        )
        for i in range(0, speech.size, PROTOCOL_RATE // 50):  # at the pace it is spoken
            s.ws.send_text(append_event(speech[i : i + PROTOCOL_RATE // 50]))
            time.sleep(0.02)
        s.ws.send_text(append_event(np.zeros(PROTOCOL_RATE * 2, np.float32)))
        late = receive_until(
            s.ws, lambda e: e["type"] == "response.done" and "Rain" in json.dumps(e)
        )
    kinds = types(late)
    completed = kinds.index("response.mcp_call.completed")
    stopped = kinds.index("input_audio_buffer.speech_stopped")
    assert completed < stopped  # the result came while the user was speaking
    result_id = late[-1]["response"]["id"]  # the answer that says the result
    result_created = next(
        i
        for i, e in enumerate(late)
        if e["type"] == "response.created" and e["response"]["id"] == result_id
    )
    assert stopped < result_created  # and was answered after the sentence
    assert "Rain tomorrow in Rome." in text(late)
