"""Partial passes in a worker process of their own (app/speech/partial_passes.py), with
the bundled tiny.en model and real speech."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from app.audio import resample
from app.catalog import registry as model_registry
from app.speech.asr import WhisperASR
from app.speech.partial_passes import MAX_BUSY_SHARE, DutyCycle
from tests.conftest import load_clip


@pytest.fixture(scope="module")
def asr() -> WhisperASR:
    return WhisperASR(model_registry.locate("whisper-tiny.en", "asr"), name="whisper-tiny.en")


def test_partials_apart_hear_what_partials_in_process_hear_and_wait_for_finals(
    asr: WhisperASR, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `partials_apart` a partial pass runs in a worker process of its own: the same
    words as in the server's process, and that process is stopped (state T) while a final
    pass decodes, so the final never waits for a partial. Closing ends the process."""
    speech = resample(load_clip("jfk.flac"), 24_000, 16_000)[: 6 * 16_000]
    apart = WhisperASR(
        model_registry.locate("whisper-tiny.en", "asr"), name="whisper-tiny.en", partials_apart=True
    )
    try:
        here = asyncio.run(asr.run(speech, prefix="And so", partial=True)).text
        there = asyncio.run(apart.run(speech, prefix="And so", partial=True)).text
        assert there == here and there.startswith("And so")
        pid = apart._partials.pid if apart._partials is not None else None
        assert pid is not None
        states: list[str] = []
        decode = apart._decode

        def state() -> str:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0]

        def spied(*args):  # type: ignore[no-untyped-def]
            # SIGSTOP takes effect a moment after kill() returns
            for _ in range(200):
                if state() == "T":
                    break
                time.sleep(0.01)
            states.append(state())
            return decode(*args)

        monkeypatch.setattr(apart, "_decode", spied)
        assert apart.transcribe(speech).text == asr.transcribe(speech).text
        assert states == ["T"]
        for _ in range(200):  # ... and SIGCONT a moment after
            if state() != "T":
                break
            time.sleep(0.01)
        assert state() != "T"

        # A partial whose turn ended (its caller cancelled) is not finished after the
        # final pass: the process stays stopped, off the answer's cores, until the next
        # partial is asked for.
        async def abandon_then_final() -> None:
            stale = asyncio.create_task(apart.run(speech, partial=True))
            await asyncio.sleep(0.05)
            stale.cancel()
            await asyncio.gather(stale, return_exceptions=True)
            await apart.run(speech)

        asyncio.run(abandon_then_final())
        assert states[-1] == "T" and state() == "T"
        # Bugs: a second final while it was held left it stopped for good (two pauses,
        # one resume), and a warm-up queued behind the stale rest waited forever (found
        # in a clean-clone run: the suite hung).
        asyncio.run(apart.run(speech))
        warmed = threading.Thread(target=apart.warm_up_partials, args=(speech,), daemon=True)
        warmed.start()
        warmed.join(timeout=120)
        assert not warmed.is_alive()
        again = asyncio.run(
            asyncio.wait_for(apart.run(speech, prefix="And so", partial=True), timeout=120)
        ).text
        assert again == here and state() != "T"

        # Found in review: held, a final starts, a new partial queues behind the stale
        # rest, the final ends: the new partial must not wait behind a stopped process.
        async def final_around_a_new_partial() -> str:
            assert apart._partials is not None
            apart._partials.final_started()
            waiting = asyncio.create_task(apart.run(speech, prefix="And so", partial=True))
            await asyncio.sleep(0)  # it has asked: queued behind the stale rest
            apart._partials.final_ended()
            return (await asyncio.wait_for(waiting, timeout=120)).text

        asyncio.run(abandon_then_final())
        assert asyncio.run(final_around_a_new_partial()) == here
    finally:
        apart.close()
    assert not os.path.exists(f"/proc/{pid}") or state() == "Z"


def test_a_partial_whose_turn_ended_stops_at_once(asr: WhisperASR) -> None:
    """Bug: a partial still running when its turn ended (the final pass had finished and
    let the process go on) ran to its end beside the answer's first token, which came
    150-200 ms after the request instead of 70-130. Cancelled while it runs, it is stopped
    at once; the next partial lets it finish, then gets its own words."""
    speech = resample(load_clip("jfk.flac"), 24_000, 16_000)[: 6 * 16_000]
    here = asyncio.run(asr.run(speech, prefix="And so", partial=True)).text
    apart = WhisperASR(
        model_registry.locate("whisper-tiny.en", "asr"), name="whisper-tiny.en", partials_apart=True
    )
    try:
        apart.warm_up_partials(speech)
        assert apart._partials is not None
        partials, pid = apart._partials, apart._partials.pid

        def state() -> str:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0]

        async def abandon_while_running() -> None:
            stale = asyncio.create_task(apart.run(speech, partial=True))
            for _ in range(2000):  # until the process has it
                if partials._running is not None:
                    break
                await asyncio.sleep(0.005)
            stale.cancel()
            await asyncio.gather(stale, return_exceptions=True)

        asyncio.run(abandon_while_running())
        for _ in range(200):  # SIGSTOP takes effect a moment after kill() returns
            if state() == "T":
                break
            time.sleep(0.01)
        assert state() == "T"
        again = asyncio.run(
            asyncio.wait_for(apart.run(speech, prefix="And so", partial=True), timeout=120)
        ).text
        assert again == here and state() != "T"
    finally:
        apart.close()


def test_a_duty_cycle_rests_in_proportion_to_what_it_ran() -> None:
    now = [100.0]
    duty = DutyCycle(0.25, clock=lambda: now[0])
    assert not duty.resting()
    duty.ran(0.2)  # at most a quarter of the time: 0.6 s of rest
    now[0] += 0.59
    assert duty.resting()
    now[0] += 0.01
    assert not duty.resting()
    with pytest.raises(ValueError, match="share"):
        DutyCycle(0.0)


def test_after_a_partial_pass_the_model_is_busy_until_its_share_of_time_is_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Partials under load give way: a session's partial loop skips while the model is
    busy, and it is while the passes rest (MAX_BUSY_SHARE)."""
    speech = resample(load_clip("jfk.flac"), 24_000, 16_000)[: 3 * 16_000]
    apart = WhisperASR(
        model_registry.locate("whisper-tiny.en", "asr"), name="whisper-tiny.en", partials_apart=True
    )
    try:
        assert apart._partials is not None and not apart.busy
        ticks = iter([10.0, 10.5, 10.5])  # the pass: start, end, and its rest from the end
        now = [0.0]
        monkeypatch.setattr(apart._partials.duty, "clock", lambda: next(ticks, None) or now[0])
        asyncio.run(apart.run(speech, partial=True))
        assert next(ticks, None) is None  # both were read by the pass
        rest = 0.5 * (1 / MAX_BUSY_SHARE - 1)
        now[0] = 10.5 + rest - 0.01
        assert apart.busy
        now[0] = 10.5 + rest
        assert not apart.busy
    finally:
        apart.close()
