"""Random client-event sequences against a real `Session` (real VAD, ASR, TTS and engine).

Whatever a client sends, in any order: no exception escapes (no `server_error`), every
`response.created` gets exactly one `response.done`, and once the session is closed
nothing it started is left: no asyncio task, no engine request, no KV block held, no
event sent after the end, no new thread (each model's executor threads are created
once, not per session). Each example is one `asyncio.run`; the sequences are
derandomized, so a run is repeatable; a few explicit examples cover paths that 25
random ones rarely reach (an answer played and truncated, a barge-in).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.audio import PROTOCOL_RATE, float_to_pcm16
from app.protocol.dialect import BETA
from app.protocol.server_events import (
    AudioDelta,
    ItemCreated,
    ItemDeleted,
    OutputItemAdded,
    ResponseCreated,
    ResponseDone,
    SessionCreated,
    TranscriptionCompleted,
)
from app.realtime.session import Session
from tests.conftest import load_clip

SPEECH_S = 1.0  # one append of speech (jfk.flac from one of these offsets) ...
SPEECH_STARTS_S = [0.3, 1.0, 2.0, 3.0, 5.8, 7.0, 8.5]
SILENCE_S = 0.6  # ... or of silence: enough to end a VAD turn (0.5 s)
SETTLE_S = 15.0  # how long what the session started may take to wind down after close
Action = tuple[Any, ...]


def _append(samples: np.ndarray) -> dict[str, Any]:
    audio = base64.b64encode(float_to_pcm16(samples)).decode()
    return {"type": "input_audio_buffer.append", "audio": audio}


def _chunks() -> dict[str, dict[str, Any]]:
    n = int(SPEECH_S * PROTOCOL_RATE)
    jfk = load_clip("jfk.flac")
    chunks = {
        f"speech{i}": _append(jfk[int(s * PROTOCOL_RATE) :][:n])
        for i, s in enumerate(SPEECH_STARTS_S)
    }
    silence = np.zeros(int(SILENCE_S * PROTOCOL_RATE), dtype=np.float32)
    chunks["silence"] = _append(silence)
    for i, s in enumerate(SPEECH_STARTS_S):  # a whole VAD turn in one append
        chunks[f"utterance{i}"] = _append(
            np.concatenate([jfk[int(s * PROTOCOL_RATE) :][:n], silence])
        )
    return chunks


def _modalities(audio: bool) -> list[str]:
    return ["text", "audio"] if audio else ["text"]


speech = st.integers(0, len(SPEECH_STARTS_S) - 1)
waits = st.tuples(st.just("wait"), st.sampled_from([0.05, 0.5, 1.5]))  # seconds
actions = st.one_of(
    st.tuples(st.just("speech"), speech),
    st.tuples(st.just("utterance"), speech),  # speech, then silence ending the turn
    st.just(("silence",)),
    st.just(("commit",)),
    st.just(("clear",)),
    st.tuples(st.just("vad"), st.booleans(), st.booleans()),  # on, create_response
    st.tuples(st.just("modalities"), st.booleans()),  # audio
    st.tuples(st.just("respond"), st.integers(1, 6), st.booleans()),  # max tokens, audio
    st.just(("cancel",)),
    st.tuples(st.just("item"), st.sampled_from(["user", "assistant", "system"])),
    st.tuples(st.just("truncate"), st.booleans(), st.integers(0, 400)),  # bogus id, ms
    st.tuples(st.just("delete"), st.booleans()),  # bogus id
    waits,
    waits,  # twice: answers get time to run
)


def _client_event(
    action: Action, chunks: dict[str, dict[str, Any]], seen: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The client event for `action`; item ids are taken from the events seen so far."""
    kind = action[0]
    if kind in ("speech", "utterance"):
        return chunks[f"{kind}{action[1]}"]
    if kind == "silence":
        return chunks["silence"]
    if kind == "commit":
        return {"type": "input_audio_buffer.commit"}
    if kind == "clear":
        return {"type": "input_audio_buffer.clear"}
    if kind == "vad":
        detection = {"type": "server_vad", "create_response": action[2]} if action[1] else None
        return {"type": "session.update", "session": {"turn_detection": detection}}
    if kind == "modalities":
        return {"type": "session.update", "session": {"modalities": _modalities(action[1])}}
    if kind == "respond":
        options = {"max_output_tokens": action[1], "modalities": _modalities(action[2])}
        return {"type": "response.create", "response": options}
    if kind == "cancel":
        return {"type": "response.cancel"}
    if kind == "item":
        part = "input_text" if action[1] != "assistant" else "text"
        content = [{"type": part, "text": "Say one word."}]
        item = {"type": "message", "role": action[1], "content": content}
        return {"type": "conversation.item.create", "item": item}
    if kind == "truncate":
        answers = [e["item"]["id"] for e in seen if e["type"] == OutputItemAdded.TYPE]
        item_id = "item_bogus" if action[1] or not answers else answers[-1]
        return {
            "type": "conversation.item.truncate",
            "item_id": item_id,
            "content_index": 0,
            "audio_end_ms": action[2],
        }
    if kind == "delete":
        items = [e["item"]["id"] for e in seen if e["type"] == ItemCreated.TYPE]
        item_id = "item_bogus" if action[1] or not items else items[-1]
        return {"type": "conversation.item.delete", "item_id": item_id}
    assert kind == "wait"
    return None


async def _settle(condition: Callable[[], bool], what: Callable[[], str]) -> None:
    """Wait until `condition()` holds; fail with `what()` after SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    while not condition():
        assert time.monotonic() < deadline, what()
        await asyncio.sleep(0.02)


async def _run_session(
    components: Any, chunks: dict[str, dict[str, Any]], script: list[Action]
) -> list[dict[str, Any]]:
    """Play `script` on a fresh session, close it; returns every event it sent."""
    session = Session(components=components, dialect=BETA)  # the event names checked below
    seen: list[dict[str, Any]] = []

    async def drain() -> None:
        while (event := await session.outbox.get()) is not None:
            seen.append(event)

    drainer = asyncio.create_task(drain(), name="drain")
    await session.start()
    # short answers (the session default is 128 tokens, spoken at real-time pace)
    await session.handle(
        json.dumps(
            {
                "type": "session.update",
                # silence ends each turn (the fuzz's turns are cut by silence, not sentences)
                "session": {
                    "max_response_output_tokens": 8,
                    "turn_detection": {"type": "server_vad"},
                },
            }
        )
    )
    for action in script:
        event = _client_event(action, chunks, seen)
        if event is None:
            await asyncio.sleep(action[1])
        else:
            await session.handle(json.dumps(event))
        await asyncio.sleep(0)  # the drainer sees what this event caused
    await session.close()
    await asyncio.wait_for(drainer, SETTLE_S)
    me = asyncio.current_task()

    def others() -> list[str]:  # every task the session started has ended
        return [t.get_name() for t in asyncio.all_tasks() if t is not me]

    await _settle(lambda: not others(), lambda: f"tasks left after close: {others()}")
    llm = components.llm.llm

    def idle() -> bool:
        stats = llm.stats()
        return (
            stats.num_running == 0
            and stats.num_waiting == 0
            and stats.kv_blocks_free == stats.kv_blocks_total
        )

    await _settle(idle, lambda: f"engine not idle after close: {llm.stats()}")
    with pytest.raises(asyncio.TimeoutError):  # nothing was sent after the end of the outbox
        late = await asyncio.wait_for(session.outbox.get(), 0.05)
        raise AssertionError(f"event after close: {late}")
    return seen


def _check(events: list[dict[str, Any]]) -> None:
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert not [e for e in errors if e["code"] == "server_error"], errors
    created = Counter(e["response"]["id"] for e in events if e["type"] == ResponseCreated.TYPE)
    done = Counter(e["response"]["id"] for e in events if e["type"] == ResponseDone.TYPE)
    assert all(n == 1 for n in created.values()), created
    assert done == created, (created, done)
    failed = [
        e["response"]
        for e in events
        if e["type"] == ResponseDone.TYPE and e["response"]["status"] == "failed"
    ]
    assert not failed, failed
    assert events[0]["type"] == SessionCreated.TYPE
    announced: set[str] = set()
    deleted: set[str] = set()
    open_responses: set[str] = set()
    for event in events:  # in order: nothing ends before it began, nothing goes twice
        if event["type"] == ItemCreated.TYPE:
            announced.add(event["item"]["id"])
        elif event["type"] == ItemDeleted.TYPE:
            assert event["item_id"] in announced - deleted, event
            deleted.add(event["item_id"])
        elif event["type"] == ResponseCreated.TYPE:
            open_responses.add(event["response"]["id"])
        elif event["type"] == ResponseDone.TYPE:
            assert event["response"]["id"] in open_responses, event
            open_responses.discard(event["response"]["id"])


@dataclass(frozen=True)
class World:
    components: Any
    chunks: dict[str, dict[str, Any]] = field(repr=False)
    threads: int  # threads alive once every model's executor has run


@pytest.fixture(scope="module")
def fuzz_world(shared_components: Any) -> World:
    """Chunks, and the thread count once every model's executor has run (a fixed
    session that speaks, transcribes and answers aloud)."""
    if not hasattr(shared_components.llm, "llm"):
        pytest.skip("needs the embedded engine (its KV accounting)")
    chunks = _chunks()
    # a spoken turn, answered aloud (server_vad's create_response), given time to finish
    warm: list[Action] = [("speech", 0), ("speech", 1), ("silence",), ("silence",), ("wait", 8.0)]
    events = asyncio.run(_run_session(shared_components, chunks, warm))
    _check(events)
    types = [e["type"] for e in events]
    assert TranscriptionCompleted.TYPE in types, types
    assert AudioDelta.TYPE in types, types
    return World(shared_components, chunks, threading.active_count())


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(script=st.lists(actions, min_size=3, max_size=8))
# a few sequences that random search rarely reaches on 25 examples:
@example(  # a voice turn answered aloud, then truncated while playing, then deleted
    script=[
        ("utterance", 0),
        ("wait", 1.5),
        ("wait", 1.5),
        ("truncate", False, 200),
        ("delete", False),
    ]
)
@example(  # barge-in: speech while an answer plays (past the hold), then the turn ends
    script=[
        ("item", "user"),
        ("respond", 6, True),
        ("wait", 0.5),
        ("speech", 1),
        ("silence",),
        ("wait", 1.5),
    ]
)
@example(  # manual turn without VAD, answered, cancelled mid-way, VAD back on, speech
    script=[
        ("vad", False, False),
        ("speech", 0),
        ("commit",),
        ("respond", 6, True),
        ("wait", 0.5),
        ("cancel",),
        ("vad", True, True),
        ("utterance", 4),
    ]
)
@example(  # speech, then the session ends while the turn and early passes are in flight
    script=[("speech", 2), ("speech", 3), ("silence",), ("speech", 4), ("clear",), ("utterance", 5)]
)
def test_random_client_event_sequences(fuzz_world: World, script: list[Action]) -> None:
    events = asyncio.run(_run_session(fuzz_world.components, fuzz_world.chunks, script))
    _check(events)
    threads = [t.name for t in threading.enumerate()]
    assert len(threads) <= fuzz_world.threads, threads
