"""How `bench asr --long` (long.py) scores its clips: each path's transcript of each clip
against what was said, and the time of a final pass over turns of 5 to 60 s."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

RATE = 16_000
TAIL_S = 0.2  # the silence after the speech a final pass hears
TURN_LENGTHS_S = (5, 15, 30, 60)
TIMED_PASSES = 3


def _heard(audio: Any) -> Any:
    import numpy as np

    return np.concatenate([audio, np.zeros(int(TAIL_S * RATE), np.float32)])


def as_turns(asr: Any, pieces: list[Any], language: str, context: bool) -> str:
    """`pieces` transcribed as the server's turns, one final pass each; with `context`,
    each prompted with the words of the turns before it as TurnTranscriber prompts a
    turn soon after the last (TurnTranscriber.words_before)."""
    from app.speech.whisper_decoding import context_prompt
    from app.text_units import join

    texts: list[str] = []
    before: str | None = None
    for piece in pieces:
        heard = asr.transcribe(_heard(piece), language=language, context=before).text
        texts.append(heard)
        before = context_prompt(before, heard) if context else None
    return join(texts)


def compare(asr: Any, language: str, clips: list[Any], log: Any) -> tuple[Any, Any]:
    """Each clip through each path, interleaved: per-clip rows and per-path totals."""
    from bench.asr.passes import alone
    from bench.voice.stats import word_errors

    paths: dict[str, Callable[[Any, list[Any]], str | None]] = {
        "server": lambda audio, _: asr.transcribe(audio, language=language).text,
        "faster_whisper_beam5": lambda audio, _: alone(asr.model, audio, language).text,
        "server_turns": lambda _, pieces: (
            as_turns(asr, pieces, language, True) if len(pieces) > 1 else None
        ),
        "server_turns_no_context": lambda _, pieces: (
            as_turns(asr, pieces, language, False) if len(pieces) > 1 else None
        ),
    }
    totals = {p: {"errors": 0, "units": 0, "seconds": 0.0, "clips": 0} for p in paths}
    rows = []
    for name, said, samples, pieces in clips:
        audio = _heard(samples)
        row: dict[str, Any] = {"clip": name, "seconds": round(audio.size / RATE, 1)}
        for path, transcribe in paths.items():
            start = time.perf_counter()
            heard = transcribe(audio, pieces)
            if heard is None:
                continue
            seconds = time.perf_counter() - start
            errors, units = word_errors(said, heard)
            for key, value in (("errors", errors), ("units", units), ("seconds", seconds)):
                totals[path][key] += value
            totals[path]["clips"] += 1
            rate = round(errors / max(units, 1), 4)
            row[path] = {"error_rate": rate, "errors": errors, "heard": heard}
            row[path]["ms"] = round(seconds * 1000)
        rows.append(row)
        scores = ", ".join(f"{p} {row[p]['errors']}" for p in paths if p in row)
        log(f"  {name} ({row['seconds']} s, {units} units): errors {scores}")
    summary = {
        path: {
            "error_rate": round(t["errors"] / max(t["units"], 1), 4),
            "errors": t["errors"],
            "units": t["units"],
            "clips": t["clips"],
            "ms_per_clip": round(t["seconds"] / max(t["clips"], 1) * 1000),
        }
        for path, t in totals.items()
        if t["clips"]
    }
    return summary, rows


def final_times(asr: Any, language: str, clips: list[Any], log: Any) -> dict[str, Any]:
    """The final pass's time (from `speech_stopped`: the pass starts then at the latest)
    over a turn of each of TURN_LENGTHS_S (the silence after it included), cut from the
    longest clip: P50 of TIMED_PASSES passes."""
    import statistics

    longest = max((samples for _, _, samples, _ in clips), key=len)
    times: dict[str, Any] = {}
    for length in TURN_LENGTHS_S:
        audio = _heard(longest[: int((length - TAIL_S) * RATE)])  # `length` s heard
        if audio.size < length * RATE:
            continue  # no clip that long
        passes = []
        for _ in range(TIMED_PASSES):
            start = time.perf_counter()
            asr.transcribe(audio, language=language)
            passes.append(time.perf_counter() - start)
        times[f"{length}s"] = {"p50_s": round(statistics.median(passes), 3), "passes": passes}
        log(f"  final pass over a {length} s turn: P50 {statistics.median(passes):.2f} s")
    return times
