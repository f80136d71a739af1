"""The turn coordinator driven alone: scripted VAD events and ASR in, exact events and
answer requests out."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from app.executor import ModelExecutor
from app.protocol import server_events as se
from app.protocol.session_schema import AudioFormat, TurnDetection
from app.realtime.conversation import Conversation, Item
from app.realtime.turns import transcriber
from app.realtime.turns.backchannels import LISTENING_PROMPTS
from app.realtime.turns.coordinator import TurnCoordinator
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.turn import TurnPolicy
from app.realtime.turns.vad_stream import VADEvent
from tests.app.realtime.harness import Harness
from tests.app.realtime.turns.fakes import FakeOutput, FakeResponses
from tests.fakes import HeldASR, ScriptedASR


class ScriptedAudio(InputAudio):
    """Each append adds `samples` of silence and returns the scripted VAD events; the
    pauses told to end sooner are noted, (silence start, ms). `speaking` a number: the VAD
    is in speech, that many samples into a silence that may end it."""

    def __init__(self) -> None:
        super().__init__(None, AudioFormat(), TurnDetection())  # type: ignore[arg-type]
        self.script: list[tuple[int, list[VADEvent], bool | int]] = []
        self.shortened: list[tuple[int, int]] = []

    async def end_pause_after(self, silence_start: int, ms: int) -> None:
        self.shortened.append((silence_start, ms))

    async def append(self, audio_b64: str, arrived_at: float | None = None) -> list[VADEvent]:
        samples, vad_events, speaking = self.script.pop(0)
        self.buffer.append(np.zeros(samples, np.float32))
        self.vad.speaking = speaking is not False
        self.vad._silence_samples = 0 if isinstance(speaking, bool) else speaking
        self.vad.position = self.buffer.end
        return vad_events


POLICY = TurnPolicy(barge_in_hold_ms=300, merge_window_ms=1500)


class TurnHarness(Harness):
    """The coordinator over scripted audio, ASR and answers; the WebRTC track faked."""

    def __init__(
        self,
        transcripts: list[str],
        *,
        asr: ScriptedASR | None = None,
        policy: TurnPolicy = POLICY,
        turn_detection: TurnDetection | None = None,
        scorer: Any = None,
        echo: Any = None,
        output: bool = True,
    ) -> None:
        super().__init__()
        self.audio = ScriptedAudio()
        self.asr = asr or ScriptedASR(transcripts)
        self.asr.busy = True  # no partial passes: only final ones, deterministic
        self.conversation = Conversation()
        self.responses = FakeResponses()
        self.output = FakeOutput(self.responses)
        self.merges: list[str] = []
        self.coordinator = TurnCoordinator(
            audio=self.audio,
            asr=self.asr,
            conversation=self.conversation,
            responses=self.responses,
            emit=self.emit,
            policy=policy,
            turn_detection=turn_detection or TurnDetection(),
            scorer=scorer,
            on_merge=self.merges.append,
            echo=echo,
            output=self.output if output else None,
        )

    def pending(self) -> set[asyncio.Task[Any]]:
        return self.coordinator.tasks.snapshot()

    async def feed(
        self, samples: int, vad_events: list[tuple[str, int]], speaking: bool | int
    ) -> None:
        self.audio.script.append((samples, [VADEvent(k, s) for k, s in vad_events], speaking))
        await self.coordinator.append("")


async def spoken_turn(
    h: TurnHarness, start: int, stop: int, expect: list[type[se.ServerEvent]] | None = None
) -> list[Any]:
    """Speech from `start` to `stop` (VAD positions), then half a second of silence: the
    events out are `expect` (default: one whole turn, TURN)."""
    return await h.run(
        lambda: h.feed(start + 100 - h.audio.buffer.end, [("speech_started", start)], True),
        lambda: h.feed(stop + 8000 - h.audio.buffer.end, [("speech_stopped", stop)], False),
        expect=TURN if expect is None else expect,
    )


TURN = [
    se.SpeechStarted,
    se.SpeechStopped,
    se.InputAudioCommitted,
    se.ItemCreated,
    se.TranscriptionCompleted,
]


def test_a_spoken_turn_is_committed_transcribed_and_answered() -> None:
    h = TurnHarness(["hello there"])
    asyncio.run(spoken_turn(h, 16_000, 40_000))
    assert h.types == TURN
    started, stopped, committed = h.events[:3]
    assert started["audio_start_ms"] == 1000 and stopped["audio_end_ms"] == 2500
    assert started["item_id"] == stopped["item_id"] == committed["item_id"]
    assert committed["previous_item_id"] is None
    assert h.events[4]["transcript"] == "hello there"
    assert [i.text for i in h.conversation.items] == ["hello there"]
    audio_samples, _prefix = h.asr.calls[0]
    # the turn plus prefix padding, and 200 ms of the silence after it
    assert audio_samples == 40_000 - 16_000 + 300 * 16 + 3200
    assert len(h.responses.started) == 1 and h.responses.started[0].early_user_text is None


def test_after_a_clear_the_next_utterance_is_a_new_turn() -> None:
    """Bug: a clear kept the last turn (and rewound the VAD), so the next utterance
    reopened and deleted the previous turn."""

    async def main(h: TurnHarness) -> None:
        await spoken_turn(h, 16_000, 40_000)
        await h.coordinator.clear()
        await spoken_turn(h, 49_000, 70_000)  # within the merge window of the first

    h = TurnHarness(["first words", "second words"])
    asyncio.run(main(h))
    assert h.types == TURN + TURN
    assert se.ItemDeleted not in h.types
    assert [i.text for i in h.conversation.items] == ["first words", "second words"]


def test_speech_soon_after_a_turn_continues_it() -> None:
    async def main(h: TurnHarness) -> None:
        await spoken_turn(h, 16_000, 40_000)
        await h.feed(49_000 - h.audio.buffer.end, [("speech_started", 49_000)], True)
        assert h.types == TURN  # not confirmed yet: a cough would not count
        await h.feed(6000, [], True)  # past the barge-in hold: confirmed, reopens
        await h.feed(8000, [("speech_stopped", 60_000)], False)
        await h.settle()

    h = TurnHarness(["and so", "and so my fellow americans"])
    asyncio.run(main(h))
    first_id = h.events[2]["item_id"]
    assert h.types[5:7] == [se.SpeechStarted, se.ItemDeleted]
    assert h.events[6]["item_id"] == first_id
    assert [i.text for i in h.conversation.items] == ["and so my fellow americans"]
    assert h.merges == ["server_vad"]  # counted (r1voice_turn_merges_total)
    first_audio = 40_000 - 16_000 + 4800
    # both parts together, and the silence heard after (3000 samples, under 200 ms)
    assert h.asr.calls[1][0] == first_audio + (60_000 - 40_000) + 3000


def test_speech_soon_after_a_shown_answer_is_a_new_turn() -> None:
    """Bug: the merge deleted an answer the client was already playing, just when it sent
    its truncate. An answer shown or played stands; the new speech is a turn of its own."""

    async def main(h: TurnHarness) -> None:
        await spoken_turn(h, 16_000, 40_000)
        h.responses.started[0].shown = True  # its first words reached the client
        await h.feed(49_000 - h.audio.buffer.end, [("speech_started", 49_000)], True)
        await h.feed(6000, [], True)
        await h.feed(8000, [("speech_stopped", 60_000)], False)
        await h.settle()

    h = TurnHarness(["what time is it", "and the date"])
    asyncio.run(main(h))
    assert h.types == TURN + TURN
    assert [i.text for i in h.conversation.items] == ["what time is it", "and the date"]
    assert h.merges == []
    assert h.asr.calls[1][0] == 60_000 - 49_000 + 300 * 16 + 3000  # the new words only


def test_vad_switched_off_mid_turn_drops_the_turn() -> None:
    """Bug: `turn_detection: null` mid-turn left the turn (and its partial loop) open."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        assert h.coordinator.turn is not None
        await h.coordinator.reconfigure(AudioFormat(), None)

    h = TurnHarness(["unused"])
    asyncio.run(main(h))
    assert h.coordinator.turn is None
    assert h.types == [se.SpeechStarted]
    assert h.audio.buffer.size == 16_100  # the audio stays for a manual commit


def test_early_answer_released_when_the_final_transcript_matches() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()  # the early pass finished: an early answer started
        assert [a.early_user_text for a in h.responses.started] == ["what time is it"]
        assert h.responses.languages == ["en"]  # what the early pass heard
        await h.feed(8000, [("speech_stopped", 30_000)], False)
        await h.settle()

    h = TurnHarness(["what time is it"])
    asyncio.run(main(h))
    (answer,) = h.responses.started  # no second answer started
    assert answer.released_after == h.events[2]["item_id"]
    assert len(h.asr.calls) == 1  # the early pass was the final one


def test_the_final_pass_starts_at_the_lull_and_serves_the_pause() -> None:
    """The lull starts the early pass; the pause at the same silence reuses it (one ASR
    pass, one answer) instead of starting another."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_lull", 30_000)], True)
        await h.settle()
        assert [a.early_user_text for a in h.responses.started] == ["what time is it"]
        await h.feed(1600, [("speech_paused", 30_000)], True)
        await h.feed(8000, [("speech_stopped", 30_000)], False)
        await h.settle()

    h = TurnHarness(["what time is it"])
    asyncio.run(main(h))
    (answer,) = h.responses.started
    assert answer.released_after == h.events[2]["item_id"]
    assert len(h.asr.calls) == 1


def test_speech_after_a_lull_drops_its_early_answer() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_lull", 30_000)], True)
        await h.settle()
        await h.feed(4000, [("speech_resumed", 31_600)], True)

    h = TurnHarness(["what time"])
    asyncio.run(main(h))
    assert [(a.early_user_text, a.discarded) for a in h.responses.started] == [("what time", True)]
    assert not h.coordinator.turn.transcriber.paused  # partial passes go on


def test_early_answer_discarded_when_speech_resumes() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        await h.feed(4000, [("speech_resumed", 33_000)], True)

    h = TurnHarness(["what time"])
    asyncio.run(main(h))
    assert [(a.early_user_text, a.discarded) for a in h.responses.started] == [("what time", True)]


def test_no_answer_starts_after_close() -> None:
    """Bug: closing cancelled the answer before the early ASR pass, whose callback could
    then start an answer nobody cancelled."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.coordinator.close()  # before the early pass reports
        await h.settle()

    h = TurnHarness(["what time"])
    asyncio.run(main(h))
    assert h.responses.started == []
    assert h.coordinator.turn is None


def over_the_answer(h: TurnHarness) -> list[se.Interruption]:
    """Our `r1voice.interruption` events: the pause ("wait") and the verdicts."""
    return h.of_type(se.Interruption)


async def speech_over_the_answer(h: TurnHarness, seconds: float = 1.0) -> None:
    """An answer plays; speech over it past the barge-in hold, then a turn's end."""
    h.responses.responding = True
    await h.feed(16_100, [("speech_started", 16_000)], True)
    assert not h.responses.playing.paused and h.types == []  # maybe a cough
    await h.feed(5000, [], True)  # past the hold: announced, the answer paused
    assert h.responses.playing.paused
    assert h.types == [se.SpeechStarted, se.Interruption]
    stop = 16_000 + int(seconds * 16_000)
    await h.feed(stop + 8000 - h.audio.buffer.end, [("speech_stopped", stop)], False)
    await h.settle()


def test_barge_in_pauses_the_answer_and_words_interrupt_it() -> None:
    """Speech over the answer pauses it; words that are no backchannel cancel it (as a
    barge-in did at once before) and the new turn is answered."""
    h = TurnHarness(["Stop, tell me about Paris instead."])
    asyncio.run(speech_over_the_answer(h))
    playing = h.responses.playing
    assert playing.cancelled == "turn_detected" and playing.resumes == 0
    assert len(h.responses.started) == 1  # the new turn is answered
    assert [e["verdict"] for e in over_the_answer(h)] == ["wait", "interrupt"]


@pytest.mark.parametrize("backchannel", ["Uh-huh.", "Yeah.", "Okay."])
def test_a_backchannel_resumes_the_answer_and_is_kept_unanswered(backchannel: str) -> None:
    h = TurnHarness([backchannel])
    asyncio.run(speech_over_the_answer(h, 0.5))
    playing = h.responses.playing
    assert playing.cancelled is None and playing.resumes == 1 and not playing.paused
    assert h.responses.started == []  # no new answer
    assert [i.text for i in h.conversation.items] == [backchannel]  # kept as a user item
    verdicts = over_the_answer(h)
    assert [e["verdict"] for e in verdicts] == ["wait", "backchannel"]
    assert verdicts[-1]["item_id"] == h.conversation.items[0].id


@pytest.mark.parametrize(
    ("fixed", "heard_before", "prompt"),
    [
        ("en", None, LISTENING_PROMPTS["en"]),  # the session's (or the model's) language
        ("zh", "en", LISTENING_PROMPTS["zh"]),  # it wins over what was heard before
        (None, "zh", LISTENING_PROMPTS["zh"]),  # detected per turn: the last one heard
        (None, None, None),  # nothing to go by: no prompt (it would bias the detection)
        ("fr", None, None),  # a language with no list
    ],
)
def test_speech_over_the_answer_is_transcribed_with_the_listening_prompt(
    fixed: str | None, heard_before: str | None, prompt: str | None
) -> None:
    """Whisper wrote Piper's "Uh-huh." as "of" and whisper-base espeak-ng's "好的" as
    "奥德": words that cancelled the answer. Speech over an answer is transcribed with a
    prompt of acknowledgements in the conversation's language; other turns with none."""
    h = TurnHarness(["Uh-huh."])
    h.asr.fixed_language = fixed
    h.conversation.add(Item("item_1", "user", "hello there", audio=True, language=heard_before))
    asyncio.run(speech_over_the_answer(h, 0.5))
    assert h.asr.prompts == [prompt]
    assert [e["verdict"] for e in over_the_answer(h)] == ["wait", "backchannel"]


@pytest.mark.parametrize("heard", ["", " you", "(coughs)"])
def test_speech_with_no_words_resumes_the_answer(heard: str) -> None:
    """A cough, a knock or a breath past the barge-in hold: the answer goes on. Before, it
    was cancelled, as after JFK's "your country" the breath cut the answer."""
    h = TurnHarness([heard])
    asyncio.run(speech_over_the_answer(h, 0.4))
    playing = h.responses.playing
    assert playing.cancelled is None and playing.resumes == 1
    assert h.responses.started == [] and h.responses.interrupts == []
    assert [e["verdict"] for e in over_the_answer(h)] == ["wait", "no_words"]


def test_the_track_is_silent_from_the_speech_start_and_plays_on_once_paused() -> None:
    """Over WebRTC the server's track goes silent when speech starts over the answer, not
    at the barge-in hold (its audio stopped 526 ms after the speech began, 300 of them the
    hold); it is released only after the pause has dropped the answer's queued audio."""

    async def main(h: TurnHarness) -> None:
        h.responses.responding = True
        await h.feed(16_100, [("speech_started", 16_000)], True)
        assert h.output.calls == [("hold", False)] and h.types == []
        await h.feed(5000, [], True)  # past the hold: paused, then released
        assert h.output.calls == [("hold", False), ("release", True)]
        await h.feed(40_000 - h.audio.buffer.end, [("speech_stopped", 32_000)], False)
        await h.settle()

    h = TurnHarness(["Stop, tell me about Paris instead."])
    asyncio.run(main(h))
    assert h.output.calls == [("hold", False), ("release", True)]
    assert h.responses.playing.cancelled == "turn_detected"


def test_a_cough_over_the_answer_holds_the_track_and_releases_it_unpaused() -> None:
    h = TurnHarness([])
    h.responses.responding = True

    async def main() -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(4000, [("speech_stopped", 19_000)], False)  # 190 ms: under the hold
        await h.settle()

    asyncio.run(main())
    assert h.output.calls == [("hold", False), ("release", False)]
    assert h.types == [] and h.responses.playing.resumes == 0
    assert not h.responses.playing.paused and h.asr.calls == []


def test_a_cough_sent_in_real_time_does_not_pass_the_hold_in_its_silence() -> None:
    """A 160 ms sound, then silence from a real-time microphone: 300 ms after it began the
    VAD is still in speech (its silence window runs 500 ms), but hears none. Before, that
    passed the barge-in hold: `speech_started`, the answer paused (found over WebRTC)."""
    h = TurnHarness([])
    h.responses.responding = True

    async def main() -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(2560, [], True)  # the sound: 160 ms
        for quiet in range(640, 4800, 640):  # 40 ms appends of silence, past the hold
            await h.feed(640, [], quiet)
        assert h.output.calls == [("hold", False)] and h.types == []
        await h.feed(640, [], 4800)  # the hold's length of silence: plays on (not at the stop)
        assert h.output.calls == [("hold", False), ("release", False)] and h.types == []
        await h.feed(640, [("speech_stopped", 18_560)], False)
        await h.settle()

    asyncio.run(main())
    assert h.types == [] and not h.responses.playing.paused
    assert h.output.calls == [("hold", False), ("release", False)]


def test_a_gap_shorter_than_the_hold_keeps_the_track_silent() -> None:
    h = TurnHarness(["Stop, tell me about Paris instead."])
    h.responses.responding = True

    async def main() -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(3200, [], 3200)  # "Wait," then 200 ms of silence: still held
        await h.feed(1600, [], True)  # "stop": past the hold, paused, then released
        await h.settle()
        assert h.output.calls == [("hold", False), ("release", True)]
        await h.feed(40_000 - h.audio.buffer.end, [("speech_stopped", 32_000)], False)
        await h.settle()

    asyncio.run(main())
    assert h.output.calls == [("hold", False), ("release", True)]
    assert h.responses.playing.cancelled == "turn_detected"


def test_a_held_turn_dropped_by_a_clear_releases_the_track() -> None:
    h = TurnHarness([])
    h.responses.responding = True

    async def main() -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.coordinator.clear()

    asyncio.run(main())
    assert h.output.calls == [("hold", False), ("release", False)]


@pytest.mark.parametrize("case", ["no answer", "interrupt_response off"])
def test_speech_holds_the_track_only_over_an_answer_it_may_interrupt(case: str) -> None:
    h = TurnHarness(["Hello there."])
    h.responses.responding = case != "no answer"
    if case == "interrupt_response off":
        h.coordinator.turn_detection = TurnDetection(interrupt_response=False)

    async def main() -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(5000, [], True)
        await h.feed(40_000 - h.audio.buffer.end, [("speech_stopped", 32_000)], False)
        await h.settle()

    asyncio.run(main())
    assert h.output.calls == []


def test_a_breath_after_the_turn_does_not_cut_its_answer() -> None:
    """The reported case: a committed turn, its answer playing, then the breath after the
    last word lasts the hold. The answer resumes; nothing is deleted or answered again."""

    async def main(h: TurnHarness) -> None:
        await spoken_turn(h, 16_000, 40_000)
        (answer,) = h.responses.started
        answer.shown, h.responses.responding, h.responses.playing = True, True, answer
        await h.feed(49_000 - h.audio.buffer.end, [("speech_started", 49_000)], True)
        await h.feed(6000, [], True)
        await h.feed(8000, [("speech_stopped", 56_000)], False)
        await h.settle()

    h = TurnHarness(["ask what you can do for your country", ""])
    asyncio.run(main(h))
    (answer,) = h.responses.started
    assert answer.cancelled is None and answer.resumes == 1
    assert se.ItemDeleted not in h.types
    assert h.conversation.items[0].text == "ask what you can do for your country"


def test_speech_that_goes_on_after_a_resume_pauses_the_answer_again() -> None:
    """Found by `bench conversation`: "Wait, stop." paused the answer, the pass at the
    comma heard nothing and resumed it, and it played over "stop" until the final pass
    cancelled it. Speech going on after a resume pauses it again, without rewinding (the
    client was not told to drop its queue), until the words decide."""

    async def main(h: TurnHarness) -> None:
        h.responses.responding = True
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(5000, [], True)  # past the hold: paused
        await h.feed(1000, [("speech_lull", 22_000)], True)  # "Wait," then a gap
        await h.settle()
        assert not h.responses.playing.paused  # the pass heard no words: resumed
        await h.feed(2000, [("speech_resumed", 24_000)], True)  # "stop."
        assert h.responses.playing.paused and h.responses.playing.pauses_again == 1
        await h.feed(34_000 - h.audio.buffer.end, [("speech_stopped", 30_000)], False)
        await h.settle()

    h = TurnHarness(["", "Wait, stop."])
    asyncio.run(main(h))
    playing = h.responses.playing
    assert playing.cancelled == "turn_detected" and playing.resumes == 1
    verdicts = [e["verdict"] for e in over_the_answer(h)]
    assert verdicts == ["wait", "no_words", "wait", "interrupt"]


def test_a_pause_in_a_backchannel_resumes_once_and_the_rest_resumes_again() -> None:
    """ "Yeah, ... yeah": paused again when the speech goes on, resumed again at its end."""

    async def main(h: TurnHarness) -> None:
        h.responses.responding = True
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(5000, [], True)
        await h.feed(1000, [("speech_lull", 22_000)], True)
        await h.settle()
        await h.feed(2000, [("speech_resumed", 24_000)], True)
        await h.feed(34_000 - h.audio.buffer.end, [("speech_stopped", 30_000)], False)
        await h.settle()

    h = TurnHarness(["Yeah.", "Yeah, yeah."])
    asyncio.run(main(h))
    playing = h.responses.playing
    assert playing.cancelled is None and not playing.paused
    assert playing.resumes == 2 and playing.pauses_again == 1
    verdicts = [e["verdict"] for e in over_the_answer(h)]
    assert verdicts == ["wait", "backchannel", "wait", "backchannel"]


def held_asr_harness(text: str) -> tuple[TurnHarness, HeldASR]:
    asr = HeldASR([text])
    return TurnHarness([], asr=asr), asr


async def speech_over_the_answer_then_silence(h: TurnHarness, seconds_after: float) -> None:
    """Speech from 1 s to 1.5 s over a playing answer (it pauses it), then silence up to
    `seconds_after` past its end; the pass at the pause is held."""
    h.responses.responding = True
    await h.feed(16_100, [("speech_started", 16_000)], True)
    await h.feed(5000, [], True)
    await h.feed(4000, [("speech_paused", 24_000)], False)
    await h.feed(24_000 + int(seconds_after * 16_000) - h.audio.buffer.end, [], False)
    await h.settle()


def test_no_words_by_the_false_interruption_timeout_resume_and_later_words_interrupt() -> None:
    """The timeout resumes an answer when no pass over the speech runs: here the pass
    at the pause was dropped (the speech went on, then stopped short of a new pause)."""

    async def main(h: TurnHarness, asr: HeldASR) -> None:
        await speech_over_the_answer_then_silence(h, 0.1)
        await h.feed(2000, [("speech_resumed", 25_600)], True)  # the held pass is dropped
        await h.feed(27_600 + 23_000 - h.audio.buffer.end, [], False)
        h.coordinator.turn.interruption.speech_ended(27_600)  # type: ignore[union-attr]
        await h.settle()
        assert h.responses.playing.paused  # 1.44 s after the speech: still waiting
        await h.feed(2000, [], False)  # 1.5 s, and no pass runs
        assert not h.responses.playing.paused and h.responses.playing.resumes == 1
        await h.feed(1000, [("speech_stopped", 27_600)], False)
        asr.ready.set()  # the final pass's words come late: they still interrupt
        await h.settle()

    h, asr = held_asr_harness("Tell me about Paris instead.")
    asyncio.run(main(h, asr))
    assert h.responses.playing.cancelled == "turn_detected"
    assert [e["verdict"] for e in over_the_answer(h)] == ["wait", "no_words", "interrupt"]


def test_a_pass_still_running_at_the_timeout_decides_without_a_resume_before_it() -> None:
    """Found in `bench voice --language zh`: "等一下," over an answer, whose final pass
    looped and was redone (2.5 s); the timeout resumed the answer at 1.5 s and it played
    on until the words cancelled it. The running pass's words are now waited for."""

    async def main(h: TurnHarness, asr: HeldASR) -> None:
        await speech_over_the_answer_then_silence(h, 2.5)  # the pass runs past 1.5 s
        assert h.responses.playing.paused and h.responses.playing.resumes == 0
        asr.ready.set()
        await h.settle()

    h, asr = held_asr_harness("等一下，")
    asyncio.run(main(h, asr))
    assert h.responses.playing.cancelled == "turn_detected"
    assert h.responses.playing.resumes == 0
    assert [e["verdict"] for e in over_the_answer(h)] == ["wait", "interrupt"]


def test_a_pass_stuck_past_the_grace_resumes_the_answer() -> None:
    async def main(h: TurnHarness, asr: HeldASR) -> None:
        await speech_over_the_answer_then_silence(h, 4.4)  # timeout 1.5 s + grace 3 s
        assert h.responses.playing.paused
        await h.feed(3200, [], False)
        assert not h.responses.playing.paused and h.responses.playing.resumes == 1
        asr.ready.set()
        await h.settle()

    h, asr = held_asr_harness("Stop.")
    asyncio.run(main(h, asr))
    assert [e["verdict"] for e in over_the_answer(h)] == ["wait", "no_words", "interrupt"]


class ScriptedScorer:
    """Turn-model verdicts in order (the last repeats); records the audio lengths scored."""

    def __init__(self, probabilities: list[float]) -> None:
        self.probabilities = probabilities
        self.scored: list[int] = []
        self.delay_s = 0.0

    async def score(self, audio_16k: np.ndarray) -> float:
        self.scored.append(audio_16k.size)
        await asyncio.sleep(self.delay_s)
        return self.probabilities[min(len(self.scored) - 1, len(self.probabilities) - 1)]


def semantic_harness(
    probabilities: list[float], eagerness: str = "auto", words: str = "Tell me the time."
) -> tuple[TurnHarness, ScriptedScorer]:
    scorer = ScriptedScorer(probabilities)
    h = TurnHarness(
        [words],
        policy=TurnPolicy(),
        turn_detection=TurnDetection(type="semantic_vad", eagerness=eagerness),
        scorer=scorer,
        output=False,
    )
    h.audio.end_speech = lambda: asyncio.sleep(0)  # type: ignore[method-assign]
    return h, scorer


def test_semantic_complete_at_the_first_pause_ends_the_turn_there() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()

    h, scorer = semantic_harness([0.9])
    asyncio.run(main(h))
    assert h.types == TURN  # ended without waiting for the 4 s silence window
    assert h.events[1]["audio_end_ms"] == 30_000 * 1000 // 16_000
    assert len(scorer.scored) == 1
    # the verdict waited for the early words (they read finished): one ASR pass (the
    # early one, reused as the final) and the answer started on it, released at once
    assert len(h.asr.calls) == 1
    (answer,) = h.responses.started
    assert answer.early_user_text == "Tell me the time." and answer.released_after is not None
    assert not answer.discarded


def test_semantic_vad_starts_its_final_pass_and_score_at_the_lull_and_judges_at_the_pause() -> None:
    """The words are ready sooner (bench voice, 1 session: P50 948 -> 729 ms), and so is
    the model's score (the same audio as the pause's: scored at the pause, it ran beside
    the early answer's prefill, issue 48); the verdict still comes at the pause, which
    reuses both: one ASR pass, one score, one held answer, released by the verdict."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_lull", 30_000)], True)
        await h.settle()
        assert len(h.asr.calls) == 1 and len(scorer.scored) == 1  # words and score now
        assert h.types == [se.SpeechStarted]  # no verdict yet
        assert [a.released_after for a in h.responses.started] == [None]  # held
        await h.feed(1600, [("speech_paused", 30_000)], True)
        await h.settle()

    h, scorer = semantic_harness([0.9])
    asyncio.run(main(h))
    assert h.types == TURN
    assert len(h.asr.calls) == 1 and len(scorer.scored) == 1
    (answer,) = h.responses.started
    assert answer.released_after is not None and not answer.discarded


def test_semantic_incomplete_but_a_question_ends_the_turn_at_the_pause() -> None:
    """The model's score of a finished question swings with the last 20 ms of audio;
    Whisper's question mark ends it rather than the 4 s silence window."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()

    h, scorer = semantic_harness([0.1])
    h.asr.texts = ["How many legs does a spider have?"]
    asyncio.run(main(h))
    assert h.types == TURN and h.events[1]["audio_end_ms"] == 30_000 * 1000 // 16_000
    assert scorer.scored and max(scorer.probabilities) < 0.5  # the model alone: keep going


def test_semantic_complete_but_words_trailing_off_keep_the_turn_open() -> None:
    """The model hears "complete" but Whisper writes the phrase as cut short: the turn
    waits for more speech (or the silence window), nothing is committed at the pause."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        assert h.types == [se.SpeechStarted]
        await h.feed(8000, [("speech_resumed", 35_000)], True)
        await h.feed(16_000, [("speech_paused", 50_000)], True)
        await h.settle()

    h, scorer = semantic_harness([0.9])
    h.asr.texts = ["I would like to book a table for...", "a table for two, please."]
    asyncio.run(main(h))
    assert h.types == TURN and len(scorer.scored) == 2  # one turn, ended at its 2nd pause
    assert h.events[1]["audio_end_ms"] == 50_000 * 1000 // 16_000


def test_semantic_verdict_applies_at_its_pause_however_fast_audio_arrives() -> None:
    """A fast client's next append (speech resuming) must not overtake the score of the
    pause before it: the same audio gives the same turns at any send rate (the bug: the
    score ran in the background and the resumed speech cancelled it)."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.feed(4000, [("speech_resumed", 33_000)], True)  # no settle in between
        await h.settle()

    h, scorer = semantic_harness([0.9])
    scorer.delay_s = 0.05  # the turn model is slower than the client
    asyncio.run(main(h))
    assert h.types == TURN  # ended at the pause the model heard complete
    assert h.events[1]["audio_end_ms"] == 30_000 * 1000 // 16_000


def test_semantic_scores_the_speech_up_to_the_pause_and_no_silence() -> None:
    """Bugs: the score took the audio to the end of the client's append (which may hold
    resumed speech), so the verdict depended on how the client chunked its audio; then
    to where the pause was heard (200 ms of silence in), and Smart Turn takes trailing
    silence for a finished turn (see semantic_end)."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        h.audio.script.append((16_000, [VADEvent("speech_paused", 28_800, 32_000)], True))
        await h.coordinator.append("")
        await h.settle()

    h, scorer = semantic_harness([0.1])
    asyncio.run(main(h))
    padding = 300 * 16
    assert scorer.scored == [28_800 - (16_000 - padding)]  # not 32_000, nor 32_100


def test_semantic_pause_uses_the_score_of_its_own_lull_only() -> None:
    """A lull the speech goes on from is scored (or its score cancelled) and forgotten;
    the pause judges with the score of the lull at its own position, and a pause with
    none is scored there."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(8000, [("speech_lull", 20_000)], True)  # a breath: sounds unfinished
        await h.feed(1600, [("speech_resumed", 21_000)], True)
        await h.feed(8000, [("speech_lull", 30_000)], True)  # sounds finished
        await h.feed(1600, [("speech_paused", 30_000)], True)  # ends the turn with it
        await h.settle()
        assert h.types == TURN and scorer.scored[-1] == 30_000 - 11_200
        before.append(len(scorer.scored))
        await h.feed(16_100, [("speech_started", 60_000)], True)
        await h.feed(16_000, [("speech_paused", 70_000)], True)  # no lull: scored here
        await h.settle()

    h, scorer = semantic_harness([0.9])
    before: list[int] = []
    breath = 20_000 - 11_200  # the first lull's audio (the turn's start less its padding)
    score = scorer.score

    async def by_audio(audio_16k: np.ndarray) -> float:
        probability = await score(audio_16k)
        return 0.1 if audio_16k.size == breath else probability

    scorer.score = by_audio  # type: ignore[method-assign]
    asyncio.run(main(h))
    assert len(scorer.scored) == before[0] + 1  # the lull-less pause, scored at it
    assert scorer.scored.count(30_000 - 11_200) == 1


def test_semantic_incomplete_is_not_rescored_as_the_pause_grows() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        assert h.types == [se.SpeechStarted]  # "incomplete": keep listening
        await h.feed(6400, [], True)  # 400 ms more of the same pause
        await h.settle()

    h, scorer = semantic_harness([0.2, 0.9])
    asyncio.run(main(h))
    assert h.types == [se.SpeechStarted] and len(scorer.scored) == 1


def test_semantic_incomplete_then_complete_is_one_turn() -> None:
    """A pause heard incomplete, the speech goes on, the next pause is heard complete."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        await h.feed(8000, [("speech_resumed", 35_000)], True)
        await h.feed(16_000, [("speech_paused", 50_000)], True)
        await h.settle()

    h, scorer = semantic_harness([0.2, 0.8])
    asyncio.run(main(h))
    assert h.types == TURN and len(scorer.scored) == 2
    assert scorer.scored[1] > scorer.scored[0]  # the longer utterance, up to its new pause
    assert h.events[1]["audio_end_ms"] == 50_000 * 1000 // 16_000


def test_semantic_never_complete_ends_at_the_silence_window() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        await h.feed(64_000, [("speech_stopped", 30_000)], False)  # the eagerness's max wait
        await h.settle()

    h, _scorer = semantic_harness([0.1])
    asyncio.run(main(h))
    assert h.types == TURN
    assert TurnDetection(type="semantic_vad", eagerness="auto").silence_duration_ms == 4000


def test_semantic_resumed_speech_drops_the_held_answer() -> None:
    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        await h.feed(4000, [("speech_resumed", 33_000)], True)
        await h.settle()

    h, _scorer = semantic_harness([0.3])
    asyncio.run(main(h))
    assert h.types == [se.SpeechStarted]
    assert [(a.early_user_text, a.discarded) for a in h.responses.started] == [
        ("Tell me the time.", True)
    ]


class ScriptedEcho:
    """What the coordinator needs of the echo reference: audible or not, echo or not."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self.checks = 0

    def audible(self) -> bool:
        return True  # the answer's audio ended a moment ago: its tail may still be heard

    def heard(self, window: np.ndarray) -> bool:
        self.checks += 1
        return self.echo

    def stopped(self) -> None:
        pass


def echo_harness(echo: bool) -> tuple[TurnHarness, ScriptedEcho]:
    scripted = ScriptedEcho(echo)
    h = TurnHarness(["yes"], echo=scripted)
    h.audio.vad_model = SimpleNamespace(executor=ModelExecutor("vad-test"))  # type: ignore[assignment]
    return h, scripted


def test_a_short_reply_just_after_the_answer_is_a_turn() -> None:
    """Bug: while the answer's audio might still be heard, speech shorter than the hold
    was dropped as a cough, so a quick "yes" right after the answer was lost."""
    h, echo = echo_harness(echo=False)
    asyncio.run(spoken_turn(h, 16_000, 19_200))  # 200 ms of speech, no answer running
    assert h.types == TURN and echo.checks == 1


def test_our_own_voice_after_the_answer_is_no_turn() -> None:
    h, echo = echo_harness(echo=True)
    asyncio.run(spoken_turn(h, 16_000, 40_000, expect=[]))
    assert echo.checks == 1


def test_the_final_pass_hears_the_silence_after_the_speech() -> None:
    """Bug: the final pass ended at the VAD's silence start, which may fall inside a word's
    fading end, and Whisper over a fitted window then misread it ("France" -> "friend").
    It now hears up to 200 ms of the silence after; the item's audio still ends there."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_lull", 30_000)], True)  # heard up to 32_100
        await h.settle()
        await h.feed(8000, [("speech_stopped", 30_000)], False)
        await h.settle()
        await h.feed(16_100, [("speech_started", 60_000)], True)
        await h.feed(16_000, [("speech_stopped", 62_000)], False)  # no lull: the stop's pass
        await h.settle()

    h = TurnHarness(["what time is it", "and the date"])
    asyncio.run(main(h))
    padding = 4800  # prefix_padding_ms 300
    first, second = (size for size, _ in h.asr.calls)
    assert first == 32_100 - (16_000 - padding)  # to where the lull was heard (< 200 ms on)
    assert second == 62_000 + 3200 - (60_000 - padding)  # 200 ms of the stop's 500
    assert h.coordinator.continuation.last.audio.size == 62_000 - (60_000 - padding)


@pytest.mark.parametrize(
    ("eagerness", "words", "wait_ms"),
    [
        ("auto", "I had a long day.", 1500),
        ("low", "I had a long day.", 2500),
        ("high", "I had a long day.", 800),
        # words that plainly ask wait the shorter plain wait (#48: the doubt was the P95)
        ("auto", "Tell me the time.", 600),
        ("high", "Tell me the time.", 400),
        ("low", "Tell me the time.", 2500),  # low lets people take their time
    ],
)
def test_semantic_doubt_ends_the_turn_if_the_pause_lasts_the_doubt_wait(
    eagerness: str, words: str, wait_ms: int
) -> None:
    """The model hears "incomplete" but the words read as a finished sentence: the turn
    is not ended at the pause, nor left to the eagerness's maximum wait: the VAD is told
    to end it after the eagerness's doubt wait (its plain wait when the words plainly
    ask), and then it is one turn."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        assert h.types == [se.SpeechStarted]
        assert h.audio.shortened == [(30_000, wait_ms)]
        await h.feed(wait_ms * 16, [("speech_stopped", 30_000)], False)  # the VAD, then
        await h.settle()

    h, _scorer = semantic_harness([0.1], eagerness, words)
    asyncio.run(main(h))
    assert h.types == TURN and h.events[1]["audio_end_ms"] == 30_000 * 1000 // 16_000


def test_semantic_doubt_then_speech_resumes_is_one_turn() -> None:
    """JFK's "And so, my fellow Americans" sounds finished (p ~0.9) but Whisper writes it
    without a sentence end: a doubt, so the resumed speech continues the same turn
    (before: committed at the pause, then merged and deleted)."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_paused", 30_000)], True)
        await h.settle()
        await h.feed(8000, [("speech_resumed", 46_000)], True)  # a 1 s pause
        await h.feed(16_000, [("speech_paused", 60_000)], True)
        await h.settle()

    h, scorer = semantic_harness([0.9, 0.9])
    h.asr.texts = ["and so my fellow americans", "And so, my fellow Americans, ask not."]
    asyncio.run(main(h))
    assert h.types == TURN and len(scorer.scored) == 2 and not h.merges
    assert h.audio.shortened == [(30_000, 1500)]
    assert h.events[1]["audio_end_ms"] == 60_000 * 1000 // 16_000


class FinalFailsASR(ScriptedASR):
    """The first pass hears its text; every pass after it fails (the ASR broke)."""

    async def run(
        self, audio_16k: np.ndarray, prefix: str | None = None, prompt: str | None = None, **_: Any
    ) -> Any:
        if self.calls:
            raise RuntimeError("the ASR broke")
        return await super().run(audio_16k, prefix, prompt)


def test_a_failed_final_pass_drops_the_early_answer() -> None:
    """Found reading the code: a held early answer was released or dropped only once the
    final transcript came, so when the final pass failed it went on generating (an engine
    request and its KV blocks) until its token bound."""

    async def main(h: TurnHarness) -> None:
        await h.feed(16_100, [("speech_started", 16_000)], True)
        await h.feed(16_000, [("speech_lull", 30_000)], True)
        await h.settle()
        assert [a.early_user_text for a in h.responses.started] == ["what time"]
        await h.feed(8000, [("speech_stopped", 32_000)], False)  # a new pass: it fails
        await h.settle()

    h = TurnHarness([], asr=FinalFailsASR(["what time"]))
    asyncio.run(main(h))
    assert [(a.early_user_text, a.discarded) for a in h.responses.started] == [("what time", True)]


@pytest.mark.parametrize("prime", [True, False])
def test_a_partial_pass_primes_the_answer_where_the_server_primes(
    prime: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain from the server's R1VOICE_LLM_PRIME (TurnPolicy.prime) to the session's
    responses: the words of a partial pass over the turn being spoken, their unsettled
    end left out (priming.py)."""
    monkeypatch.setattr(transcriber, "PARTIAL_POLL_S", 0)

    async def main(h: TurnHarness) -> None:
        await h.feed(32_100, [("speech_started", 16_000)], True)  # 2 s of speech so far
        h.asr.busy = False  # partial passes may run
        for _ in range(200):
            await asyncio.sleep(0.005)
            if h.asr.calls:
                break
        await asyncio.sleep(0.01)
        await h.coordinator.close()

    h = TurnHarness(["What is the capital of..."], policy=TurnPolicy(prime=prime))
    asyncio.run(main(h))
    assert len(h.asr.calls) == 1  # the case is what its name says
    assert h.responses.primed == ([("What is the capital of", "en")] if prime else [])
