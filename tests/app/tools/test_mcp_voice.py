"""An MCP tool used by voice: a spoken turn (real VAD and ASR) is answered in audio by a
response that calls a real MCP server's tool and speaks from its result; the same
session, turn taking and voices as any spoken turn. The model is scripted (it calls the
tool, then answers from the result note), so what is held exact is the server's part."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import numpy as np
import pytest

from app.audio import PROTOCOL_RATE
from app.llm import ChatMessage, GenerationParams, LLMDelta
from tests.app.protocol.test_ga_conformance import invalid_events
from tests.app.tools.mcp_servers import mcp_server
from tests.app.tools.test_mcp_realtime import mcp_tool, send
from tests.conftest import client_with, load_clip, receive_until, stream_audio
from tests.fakes import ScriptedLLM

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


class ToolCaller(ScriptedLLM):
    """Calls get_weather, and answers once the prompt ends with the tools' result."""

    async def stream_chat(
        self, messages: list[ChatMessage], params: GenerationParams, request_id: str
    ) -> AsyncGenerator[LLMDelta, None]:
        answered = "The tools have answered" in messages[-1].content
        self.scripts = [["It is sunny ", "in Paris."]] if answered else [[CALL]]
        async for delta in super().stream_chat(messages, params, request_id):
            yield delta


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    with mcp_server() as url:
        yield url


def called_and_completed(event: dict[str, Any]) -> bool:
    if event["type"] != "response.done" or event["response"]["status"] != "completed":
        return False
    return any(o["type"] == "mcp_call" for o in event["response"]["output"])


def test_a_spoken_question_is_answered_aloud_from_the_tools_result(
    shared_components: Any, weather_url: str
) -> None:
    llm = ToolCaller()
    client = client_with(
        dataclasses.replace(shared_components, llm=llm), mcp_allowed_urls="http://127.0.0.1:"
    )
    with client.websocket_connect("/v1/realtime") as ws:
        ws.receive_json()
        tool = mcp_tool(weather_url, require_approval="never")
        send(ws, {"type": "session.update", "session": {"type": "realtime", "tools": [tool]}})
        events = receive_until(ws, lambda e: e["type"] == "mcp_list_tools.completed")
        silence = np.zeros(PROTOCOL_RATE, np.float32)
        clip = load_clip("jfk.flac")[: 4 * PROTOCOL_RATE]
        stream_audio(ws, np.concatenate([silence, clip, *[silence] * 5]))
        events += receive_until(ws, called_and_completed)
    done = events[-1]["response"]
    start = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "response.created" and e["response"]["id"] == done["id"]
    )
    answer = events[start:]
    kinds = [e["type"] for e in answer]
    assert "input_audio_buffer.speech_started" in [e["type"] for e in events]
    call = next(o for o in done["output"] if o["type"] == "mcp_call")
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    assert call["output"] == "Sunny and 21 degrees in Paris."
    transcript = next(e for e in answer if e["type"] == "response.output_audio_transcript.done")
    assert transcript["transcript"] == "It is sunny in Paris."
    assert kinds.index("response.mcp_call.completed") < kinds.index("response.output_audio.delta")
    assert invalid_events(events) == []
