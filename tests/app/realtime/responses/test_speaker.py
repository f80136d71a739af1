"""The speaker alone: clauses in, paced 100 ms audio pieces out, and what was heard."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from app.protocol.session_schema import AudioFormat
from app.realtime.responses.speaker import Speaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def speak(clauses: list[str], seconds: float, fmt: AudioFormat, lead_ms: int = 60_000):  # type: ignore[no-untyped-def]
    sent: list[bytes] = []

    async def synthesize(text: str, rate: int, slack_s: float) -> np.ndarray:
        return np.full(int(seconds * rate), 0.25, np.float32)

    clock = Clock()
    speaker = Speaker(synthesize, fmt, lead_ms, sent.append, clock)

    async def main() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        for clause in [*clauses, None]:
            queue.put_nowait(clause)
        released = asyncio.Event()
        released.set()
        await speaker.run(queue, released)

    asyncio.run(main())
    return speaker, sent, clock


def test_pieces_are_100ms_and_clauses_are_timed() -> None:
    speaker, sent, _clock = speak(["Hello there,", "how are you today?"], 0.25, AudioFormat())
    assert [len(p) for p in sent] == [4800, 4800, 2400] * 2  # 24 kHz PCM16: 100+100+50 ms
    assert speaker.audio_ms == 500.0
    assert [(c.start_ms, c.end_ms) for c in speaker.clauses] == [(0.0, 250.0), (250.0, 500.0)]


def test_text_played_keeps_whole_clauses_and_a_share_of_words() -> None:
    speaker, _sent, clock = speak(["Hello there,", "how are you today?"], 0.25, AudioFormat())
    assert speaker.text_played(250) == "Hello there,"
    assert speaker.text_played(375) == "Hello there, how are"  # half of the second clause
    assert speaker.text_played(0) == ""
    clock.now = 0.3  # 300 ms after the first audio: that much was played
    assert speaker.played_ms() == 300.0


@pytest.mark.parametrize(
    ("clauses", "audio_end_ms", "played"),
    [
        (["你好，", "今天天气很好。"], 250, "你好，"),
        (["你好，", "今天天气很好。"], 375, "你好，今天天"),  # half of 7 characters: 3
        (["你好，", "今天天气很好。"], 500, "你好，今天天气很好。"),
        (["Sure.", "北京是中国的首都。"], 375, "Sure. 北京是中"),
        (["北京是首都。", "It is old."], 500, "北京是首都。It is old."),
    ],
)
def test_text_played_of_chinese_keeps_a_share_of_characters(
    clauses: list[str], audio_end_ms: float, played: str
) -> None:
    speaker, _sent, _clock = speak(clauses, 0.25, AudioFormat())
    assert speaker.text_played(audio_end_ms) == played


def test_g711_pieces_are_one_byte_a_sample() -> None:
    _speaker, sent, _clock = speak(
        ["Hi there, friend."], 0.2, AudioFormat(type="audio/pcmu", rate=8000)
    )
    assert [len(p) for p in sent] == [800, 800]


def test_muted_speaker_sends_nothing_more() -> None:
    sent: list[bytes] = []

    async def synthesize(text: str, rate: int, slack_s: float) -> np.ndarray:
        return np.zeros(rate, np.float32)

    speaker = Speaker(synthesize, AudioFormat(), 60_000, sent.append)
    speaker.muted = True

    async def main() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        queue.put_nowait("A whole second.")
        queue.put_nowait(None)
        released = asyncio.Event()
        released.set()
        await speaker.run(queue, released)

    asyncio.run(main())
    assert sent == []


def test_a_paused_answer_resumes_from_what_the_client_had_heard() -> None:
    """Speech over the answer pauses it; the client drops what it had queued, so a resume
    sends the audio again from where the client stopped hearing it, to the end."""
    sent: list[bytes] = []

    async def synthesize(
        text: str, rate: int, slack_s: float
    ) -> np.ndarray:  # distinct bytes everywhere
        return np.linspace(-0.9 if "first" in text else 0.1, 0.9, rate).astype(np.float32)

    clock = Clock()
    speaker = Speaker(synthesize, AudioFormat(), 60_000, sent.append, clock)

    async def main() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        released = asyncio.Event()
        released.set()
        queue.put_nowait("The first clause,")
        running = asyncio.create_task(speaker.run(queue, released))
        await asyncio.sleep(0)
        assert len(sent) == 10  # the whole first second went out ahead of playback
        clock.now = 0.4
        speaker.pause()
        assert speaker.text_played(speaker.played_ms()) == "The"  # 0.4 of three words
        queue.put_nowait("and the second one.")
        queue.put_nowait(None)
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(sent) == 10 and not running.done()  # paused: nothing more leaves
        speaker.resume()
        await running

    asyncio.run(main())
    timeline = b"".join(c.audio for c in speaker.clauses)
    assert b"".join(sent[10:]) == timeline[400 * 48 :]  # 24 kHz PCM16: 48 bytes a ms
    assert speaker.audio_ms == 2000.0


def test_paused_again_without_rewinding_it_goes_on_from_what_was_sent() -> None:
    """Paused a second time by the same speech (no new `speech_started`: the client still
    plays what it has), a resume sends only what had not been sent, nothing twice."""
    sent: list[bytes] = []

    async def synthesize(text: str, rate: int, slack_s: float) -> np.ndarray:
        return np.linspace(-0.9 if "first" in text else 0.1, 0.9, rate).astype(np.float32)

    clock = Clock()
    speaker = Speaker(synthesize, AudioFormat(), 60_000, sent.append, clock)

    async def main() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        released = asyncio.Event()
        released.set()
        queue.put_nowait("The first clause,")
        running = asyncio.create_task(speaker.run(queue, released))
        await asyncio.sleep(0)
        clock.now = 0.4
        speaker.pause(rewind=False)
        assert speaker.played_ms() == 1000.0  # the client plays all it was sent
        queue.put_nowait("and the second one.")
        queue.put_nowait(None)
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(sent) == 10 and not running.done()
        speaker.resume()
        await running

    asyncio.run(main())
    timeline = b"".join(c.audio for c in speaker.clauses)
    assert b"".join(sent) == timeline  # each byte once, in order


class Track:
    """A server-side playout (WebRTC) that has played `played` ms when asked."""

    def __init__(self) -> None:
        self.pieces: list[tuple[int, float]] = []  # (bytes, at ms)
        self.played: float | None = None
        self.stops = 0
        self.finished = False

    def play(self, piece: bytes, fmt: AudioFormat, at_ms: float) -> None:
        self.pieces.append((len(piece), at_ms))

    def played_ms(self) -> float | None:
        return self.played

    def stop(self) -> None:
        self.stops += 1

    def finish(self) -> None:
        self.finished = True


def test_a_playout_gets_every_piece_and_says_what_was_heard() -> None:
    track = Track()

    async def synthesize(text: str, rate: int, slack_s: float) -> np.ndarray:
        return np.full(int(0.25 * rate), 0.25, np.float32)

    speaker = Speaker(synthesize, AudioFormat(), 60_000, lambda _piece: None, Clock(), track)

    async def main() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        for clause in ["Hello there,", "how are you today?", None]:
            queue.put_nowait(clause)
        released = asyncio.Event()
        released.set()
        await speaker.run(queue, released)

    asyncio.run(main())
    assert [at for _size, at in track.pieces] == [0.0, 100.0, 200.0, 250.0, 350.0, 450.0]
    assert track.finished and speaker.exact
    assert speaker.played_ms() == 0.0  # nothing played yet: not the clock's estimate
    track.played = 375.0
    assert speaker.played_ms() == 375.0
    speaker.pause()  # the track drops its queue; what it played is what was heard
    assert track.stops == 1 and speaker.played_ms() == 375.0
    speaker.stop()
    assert track.stops == 2 and speaker.muted


def test_each_clause_is_due_when_the_audio_before_it_runs_out() -> None:
    """The TTS executor takes clauses earliest deadline first: a first clause is due at
    once, a later one when the listener would have heard everything before it."""
    slacks: list[float] = []
    clock = Clock()

    async def synthesize(text: str, rate: int, slack_s: float) -> np.ndarray:
        slacks.append(slack_s)
        clock.now += 0.25  # each synthesis takes 250 ms
        return np.full(rate, 0.25, np.float32)  # one second of audio a clause

    speaker = Speaker(synthesize, AudioFormat(), 60_000, lambda _piece: None, clock)

    async def main() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        for clause in ["One.", "Two.", "Three.", None]:
            queue.put_nowait(clause)
        released = asyncio.Event()
        released.set()
        await speaker.run(queue, released)

    asyncio.run(main())
    # playing starts once the first clause is ready (0.25 s): the second is asked for
    # then, with its 1 s unheard; the third 0.25 s later, with 2 s less 0.25 s heard
    assert slacks == [0.0, 1.0, 1.75]
