"""The Pipecat peer of `bench capacity --peer pipecat`: the client's protobuf frames
against bytes Pipecat 1.14's own `ProtobufFrameSerializer` wrote, the events a session
logs, and a real voice turn through the real pipeline (Pipecat in `.venv-pipecat`,
llama.cpp's server, the bundled models). No timing is asserted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench.capacity.pipecat_peer import PIPECAT_PYTHON, PeerUnavailable, PipecatPeer
from bench.voice.common import ANSWER_DONE, TRANSCRIPT_DONE
from bench.voice.pipecat_connection import PipecatConn, audio_frame, message_frame, read_frame

# Written by pipecat-ai 1.14's ProtobufFrameSerializer: an OutputAudioRawFrame of 4 bytes
# at 24 kHz mono, an RTVI message, an InterruptionFrame
PIPECAT_AUDIO = "1225080112154f7574707574417564696f5261774672616d6523301a040102030420c0bb012801"
PIPECAT_MESSAGE = (
    "22360a347b226c6162656c223a2022727476692d6169222c202274797065223a2022626f742d7374617274"
    "65642d737065616b696e67227d"
)
PIPECAT_INTERRUPTION = "2a1708031213496e74657272757074696f6e4672616d652330"


def test_frames_pipecat_wrote_are_read() -> None:
    assert read_frame(bytes.fromhex(PIPECAT_AUDIO)) == ("audio", b"\x01\x02\x03\x04")
    kind, message = read_frame(bytes.fromhex(PIPECAT_MESSAGE))
    assert (kind, message) == ("message", {"label": "rtvi-ai", "type": "bot-started-speaking"})
    assert read_frame(bytes.fromhex(PIPECAT_INTERRUPTION)) == ("interruption", None)
    assert read_frame(b"") == ("other", None)


def test_frames_we_write_are_what_pipecat_reads() -> None:
    """Checked once against Pipecat's deserializer (an InputAudioRawFrame of these bytes
    at 16 kHz, 1 channel; an InputTransportMessageFrame); these are those bytes."""
    assert audio_frame(b"\x01\x02\x03\x04").hex() == "120b1a040102030420807d2801"
    assert message_frame({"type": "client-ready"}).hex() == (
        "221a0a187b2274797065223a2022636c69656e742d7265616479227d"
    )
    assert read_frame(audio_frame(bytes(640))) == ("audio", bytes(640))  # a 20 ms chunk


def test_rtvi_messages_become_the_events_the_voice_client_reads() -> None:
    conn = PipecatConn(ws=None)
    conn._on_message(0.5, {"type": "bot-ready", "data": {"version": "1.0.0"}})
    conn._on_message(1.0, {"type": "user-stopped-speaking"})
    conn._on_message(1.1, {"type": "user-transcription", "data": {"text": "hi", "final": False}})
    conn._on_message(
        1.2, {"type": "user-transcription", "data": {"text": "hi there", "final": True}}
    )
    conn._on_message(1.5, {"type": "bot-started-speaking"})
    conn._on_message(1.6, {"type": "bot-tts-text", "data": {"text": "Hello"}})
    conn._on_message(1.7, {"type": "bot-tts-text", "data": {"text": " again."}})
    conn._on_message(2.5, {"type": "bot-stopped-speaking"})
    conn._on_message(3.0, {"type": "bot-started-speaking"})
    conn._interrupted = True  # an InterruptionFrame came
    conn._on_message(3.2, {"type": "bot-stopped-speaking"})
    assert [(t, e["type"]) for t, e in conn.log] == [
        (0.5, "session.created"),
        (1.0, "input_audio_buffer.speech_stopped"),
        (1.2, TRANSCRIPT_DONE),
        (1.5, "response.created"),
        (2.5, ANSWER_DONE[1]),
        (2.5, "response.done"),
        (3.0, "response.created"),
        (3.2, ANSWER_DONE[1]),
        (3.2, "response.done"),
    ]
    events = [e for _, e in conn.log][1:]
    assert events[1]["transcript"] == "hi there" and events[3]["transcript"] == "Hello again."
    assert events[4]["response"] == {"id": "pipecat_1", "status": "completed"}
    assert events[7]["response"] == {"id": "pipecat_2", "status": "cancelled"}


def test_the_microphone_opens_when_the_bot_is_ready() -> None:
    """Pipecat builds a session's pipeline before it reads the socket: speech sent
    meanwhile reached its VAD as one burst and the turn went unanswered (CI, stop 45).
    A real WebSocket server here says `bot-ready` a while after `client-ready`."""
    import websockets

    got: list[tuple[str, Any]] = []
    heard = asyncio.Event()

    async def bot(ws: Any) -> None:
        got.append(read_frame(await ws.recv()))
        await asyncio.sleep(0.5)  # loading the session's models
        got.append(("ready sent", None))
        await ws.send(message_frame({"label": "rtvi-ai", "type": "bot-ready", "data": {}}))
        got.append(read_frame(await ws.recv()))
        heard.set()
        await ws.wait_closed()

    async def run() -> list[str]:
        async with websockets.serve(bot, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            conn = await PipecatConn.open(f"pipecat+ws://127.0.0.1:{port}/ws")
            try:
                await asyncio.wait_for(heard.wait(), 5)
                return [e["type"] for _, e in conn.log]
            finally:
                await conn.close()

    assert asyncio.run(run()) == ["session.created"]
    assert [kind for kind, _ in got] == ["message", "ready sent", "audio"]
    assert got[0][1]["type"] == "client-ready"


def test_a_bot_that_never_says_ready_is_an_error_and_the_socket_is_closed() -> None:
    import websockets

    closed = asyncio.Event()

    async def bot(ws: Any) -> None:
        await ws.wait_closed()
        closed.set()

    async def run() -> None:
        async with websockets.serve(bot, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            with pytest.raises(TimeoutError):
                await PipecatConn.open(f"pipecat+ws://127.0.0.1:{port}/ws", ready_timeout=0.3)
            await asyncio.wait_for(closed.wait(), 5)

    asyncio.run(run())


@pytest.mark.skipif(not PIPECAT_PYTHON.exists(), reason="no .venv-pipecat: `make bench-pipecat`")
@pytest.mark.timeout(400)
def test_a_spoken_question_is_answered_by_the_pipecat_pipeline() -> None:
    from app.settings import Settings
    from bench.voice.client import voice_turn
    from bench.voice.workload import prepare_clips

    settings = Settings.from_env()
    try:
        peer = PipecatPeer(
            settings.llm_model, settings.asr_model, settings.tts_voice, settings.system_prompt
        )
    except PeerUnavailable as exc:
        pytest.fail(str(exc))  # `make test` installs both parts
    question = prepare_clips([])["q1"]

    async def talk() -> dict[str, Any]:
        conn = await PipecatConn.open(peer.url)
        try:
            await asyncio.sleep(1.0)  # the microphone is on a while before anyone speaks
            return await voice_turn(conn, question, turn_timeout=120)
        finally:
            await conn.close()

    try:
        peer.start()
        turn = asyncio.run(talk())
    finally:
        stopped = peer.stop()
    assert turn["status"] == "completed", turn
    assert turn["voice_to_voice_ms"] is not None and turn["voice_to_voice_ms"] > 0, turn
    assert turn["transcript"] and turn["answer"], turn  # Whisper heard it; Piper said something
    assert set(stopped["exit_codes"]) == {"llama.cpp", "pipecat"}
