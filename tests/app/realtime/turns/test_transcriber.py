"""The partial transcripts a turn streams while it is spoken."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from app.audio import PIPELINE_RATE
from app.realtime.turns import transcriber
from app.realtime.turns.transcriber import TurnTranscriber
from app.speech.asr import Transcript
from tests.fakes import HeldASR, ScriptedASR


class _CountedASR(ScriptedASR):
    """Sets `taken` once the pass after the scripted ones began: they are all taken in."""

    def __init__(self, hypotheses: list[str]) -> None:
        super().__init__([*hypotheses, ""])  # "": agrees on nothing, the loop may run on
        self.taken = asyncio.Event()

    async def run(
        self,
        audio_16k: np.ndarray,
        prefix: str | None = None,
        prompt: str | None = None,
        context: str | None = None,
    ) -> Transcript:
        if len(self.calls) == len(self.texts) - 1:
            self.taken.set()
        return await super().run(audio_16k, prefix, prompt, context)


async def _deltas(
    hypotheses: list[str], heard: list[tuple[str, str | None]] | None = None
) -> tuple[list[str], ScriptedASR]:
    """The deltas sent while the partial passes return `hypotheses`, one a second; each
    pass's whole text and language go to `heard`."""
    asr = _CountedASR(hypotheses)
    deltas: list[str] = []
    heard = [] if heard is None else heard
    turn = TurnTranscriber(asr, deltas.append, lambda text, lang: heard.append((text, lang)))
    seconds = 0.0

    def audio() -> np.ndarray:
        nonlocal seconds
        seconds += transcriber.PARTIAL_INTERVAL_S
        return np.zeros(int(seconds * PIPELINE_RATE), np.float32)

    turn.start(audio)
    await asyncio.wait_for(asr.taken.wait(), timeout=5)
    await turn.close()
    return deltas, asr


@pytest.mark.parametrize(
    ("hypotheses", "deltas"),
    [
        (
            ["what colour", "what colour is the", "what colour is the sky"],
            ["what colour", " is the"],
        ),
        (["我想去", "我想去北京", "我想去北京看看"], ["我想去", "北京"]),
        (
            ["我想去", "我想去 Paris", "我想去 Paris 看看", "我想去 Paris 看看。"],
            ["我想去", " Paris", " 看看。"],  # units come from the newer hypothesis
        ),
        (["Paris", "Paris 我想", "Paris 我想去"], ["Paris", " 我想"]),
    ],
)
def test_partial_deltas_are_spaced_per_script(
    hypotheses: list[str], deltas: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Joined, the deltas are the agreed text: no spaces between Chinese characters."""
    monkeypatch.setattr(transcriber, "PARTIAL_POLL_S", 0)
    sent, asr = asyncio.run(_deltas(hypotheses))
    assert sent == deltas
    # each pass is prompted with the agreed text so far, which the deltas add up to
    assert asr.calls[-1][1] == "".join(deltas)


def test_each_partial_pass_is_heard_whole_agreed_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """What priming (priming.py) is told: every hypothesis, before any agreement."""
    monkeypatch.setattr(transcriber, "PARTIAL_POLL_S", 0)
    heard: list[tuple[str, str | None]] = []
    hypotheses = ["what colour", "what color is", "what colour is the sky"]
    asyncio.run(_deltas(hypotheses, heard))
    assert heard[: len(hypotheses)] == [(h, "en") for h in hypotheses]


def test_transcribing_while_a_final_pass_runs_early_or_at_the_end() -> None:
    """What the false-interruption timeout waits on (barge_in.PASS_GRACE_S)."""

    async def main() -> list[bool]:
        asr = HeldASR(["Stop."])
        turn = TurnTranscriber(asr, lambda _d: None)
        audio = np.zeros(PIPELINE_RATE, np.float32)
        seen = [turn.transcribing()]
        turn.speculate(audio, 100)
        seen.append(turn.transcribing())  # created, not yet started
        turn.resume()  # the speech went on: the early pass is dropped
        await asyncio.sleep(0)
        seen.append(turn.transcribing())
        final = asyncio.create_task(turn.finish(audio, 200))
        await asyncio.sleep(0.01)
        seen.append(turn.transcribing())  # the pass at the end
        asr.ready.set()
        assert await final == "Stop."
        return [*seen, turn.transcribing()]

    assert asyncio.run(main()) == [False, True, False, True, False]
