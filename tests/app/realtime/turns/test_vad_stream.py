"""Silero VAD streamed in small chunks: events at the right places, independent of chunking."""

from __future__ import annotations

import numpy as np
import pytest

from app.audio import resample
from app.catalog import registry as model_registry
from app.realtime.turns.vad_stream import VADConfig, VADStream
from app.speech.vad import SileroModel
from tests.conftest import load_clip


@pytest.fixture(scope="module")
def model() -> SileroModel:
    return SileroModel(model_registry.locate("silero-vad", "vad"))


def _events(
    model: SileroModel, audio: np.ndarray, chunk: int, silence_ms: int
) -> list[tuple[str, int]]:
    vad = VADStream(model, VADConfig(silence_duration_ms=silence_ms))
    out = []
    for i in range(0, audio.size, chunk):
        out += [(e.kind, e.sample) for e in vad.process(audio[i : i + chunk])]
    return out


def test_jfk_pauses_split_turns_at_500ms_but_not_at_1200ms(model: SileroModel) -> None:
    audio = np.concatenate(
        [resample(load_clip("jfk.flac"), 24_000, 16_000), np.zeros(32_000, np.float32)]
    )
    edges = ("speech_started", "speech_stopped")
    short = [e for e in _events(model, audio, 320, 500) if e[0] in edges]
    long = [e for e in _events(model, audio, 320, 1200) if e[0] in edges]
    assert [k for k, _ in short][:2] == ["speech_started", "speech_stopped"]
    assert len(short) == 8  # JFK's three rhetorical pauses are each about a second
    assert [k for k, _ in long] == ["speech_started", "speech_stopped"]
    assert 0.2 < long[0][1] / 16_000 < 0.6  # "And so..." starts about 0.35 s in
    assert 10.5 < long[1][1] / 16_000 < 11.2


def test_chunk_size_does_not_change_events(model: SileroModel) -> None:
    audio = np.concatenate(
        [resample(load_clip("jfk.flac"), 24_000, 16_000), np.zeros(32_000, np.float32)]
    )
    assert _events(model, audio, 320, 500) == _events(model, audio, 4000, 500)


def test_silence_gives_no_events(model: SileroModel) -> None:
    assert _events(model, np.zeros(48_000, np.float32), 320, 500) == []


def test_pause_comes_before_stop_and_resume_after_short_silence(model: SileroModel) -> None:
    """A pause (200 ms of silence) is announced early; speech after it resumes the turn."""
    audio = np.concatenate(
        [resample(load_clip("jfk.flac"), 24_000, 16_000), np.zeros(32_000, np.float32)]
    )
    kinds = [k for k, _ in _events(model, audio, 320, 1200)]
    assert kinds[0] == "speech_started" and kinds[-1] == "speech_stopped"
    assert kinds[-2] == "speech_paused"  # the final silence was announced before the stop
    assert "speech_resumed" in kinds  # JFK's ~1 s pauses are shorter than 1200 ms
    paused = [s for k, s in _events(model, audio, 320, 1200) if k == "speech_paused"]
    stopped = [s for k, s in _events(model, audio, 320, 1200) if k == "speech_stopped"]
    assert paused[-1] == stopped[-1]  # both mark where the silence began


def test_a_lull_comes_before_each_pause_at_the_same_silence(model: SileroModel) -> None:
    """The final pass starts at the lull (~100 ms of silence), the turn model judges at the
    pause (~200 ms): every pause has its lull first, marking the same silence start; a
    lull too short to be a pause is followed by the resumption."""
    audio = np.concatenate(
        [resample(load_clip("jfk.flac"), 24_000, 16_000), np.zeros(32_000, np.float32)]
    )
    events = _events(model, audio, 320, 1200)
    kinds = [k for k, _ in events]
    for i, (kind, sample) in enumerate(events):
        if kind == "speech_paused":
            assert events[i - 1] == ("speech_lull", sample)
        if kind == "speech_lull":
            assert kinds[i + 1] in ("speech_paused", "speech_resumed")
    assert kinds.count("speech_lull") >= kinds.count("speech_paused") >= 3
    vad = VADStream(model, VADConfig(lull_ms=200))  # as long as the pause: both at once
    out = [e.kind for i in range(0, audio.size, 320) for e in vad.process(audio[i : i + 320])]
    assert out.count("speech_lull") == out.count("speech_paused")


def test_reset_keeps_the_stream_position(model: SileroModel) -> None:
    """Bug: reset() re-ran __init__ and rewound the position to 0, so after a clear the
    next utterance was placed inside the previous turn (which then got reopened)."""
    speech = resample(load_clip("jfk.flac"), 24_000, 16_000)[: 4 * 16_000]
    silence = np.zeros(2 * 16_000, np.float32)
    vad = VADStream(model, VADConfig())
    vad.process(np.concatenate([silence, speech]))
    fed = silence.size + speech.size
    assert vad.position == fed
    vad.reset(fed)  # the buffer was cleared mid-speech
    assert not vad.speaking and vad.position == fed
    events = vad.process(np.concatenate([silence, speech[:16_000]]))
    assert events[0].kind == "speech_started"
    assert events[0].sample >= fed + silence.size - 512  # where the new speech really is
    with pytest.raises(ValueError):
        vad.reset(0)  # positions never go back


def test_a_pause_can_be_told_to_end_the_turn_sooner(model: SileroModel) -> None:
    """semantic_vad's doubt wait: the pause being judged ends the turn once it lasts
    `end_pause_after`'s ms instead of `silence_duration_ms`; the next pause (after the
    speech resumed) keeps the long window."""
    audio = np.concatenate(
        [resample(load_clip("jfk.flac"), 24_000, 16_000), np.zeros(80_000, np.float32)]
    )
    vad = VADStream(model, VADConfig(silence_duration_ms=4000))
    events: list[tuple[str, int]] = []
    told = 0
    for i in range(0, audio.size, 320):
        for e in vad.process(audio[i : i + 320]):
            events.append((e.kind, e.sample))
            if e.kind == "speech_paused" and not told:
                vad.end_pause_after(300, e.sample + 1)  # not this pause's start: ignored
                vad.end_pause_after(300, e.sample)
                told = e.sample
    stops = [s for k, s in events if k == "speech_stopped"]
    assert [k for k, _ in events][:4] == [
        "speech_started",
        "speech_lull",
        "speech_paused",
        "speech_stopped",
    ]
    assert stops[0] == told  # ended at JFK's first pause (~1 s), where the silence began
    assert len(stops) == 2  # then one turn to the end: the later ~1 s pauses did not end it
