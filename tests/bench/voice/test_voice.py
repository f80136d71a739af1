"""The voice benchmark's pure helpers: WER, percentiles, summaries, silence trimming.

The benchmark itself (a real server and real-time clients) is far too slow for the
test suite; run it with `r1voice bench voice --quick`. No timing is asserted here.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pytest

from app.cli import build_parser
from bench.registry import BENCHES
from bench.voice import common, connection, cpu, rtc_connection, stats, transports, voice, workload


def test_normalize_ignores_case_punctuation_and_apostrophes() -> None:
    assert stats.normalize_words("Ask not -- what YOUR country can do, for you!") == [
        "ask",
        "not",
        "what",
        "your",
        "country",
        "can",
        "do",
        "for",
        "you",
    ]
    assert stats.normalize_words("Don't stop; it's fine.") == ["dont", "stop", "its", "fine"]
    assert stats.normalize_words("  ...  ") == []


@pytest.mark.parametrize(
    ("reference", "hypothesis", "errors"),
    [
        ("北京是中国的首都。", "北京是中国的首都", (0, 8)),  # characters, punctuation ignored
        ("北京是中国的首都。", "北京是中國的首都", (1, 8)),  # one character wrong
        ("我想去 Paris 看看", "我想去巴黎看看", (2, 6)),  # Paris -> 巴黎: one sub, one insert
        ("你好，世界", "你好 世界", (0, 4)),
    ],
)
def test_word_errors_of_chinese_count_characters(
    reference: str, hypothesis: str, errors: tuple[int, int]
) -> None:
    assert stats.word_errors(reference, hypothesis) == errors


def test_edit_distance_counts_substitutions_deletions_insertions() -> None:
    assert stats.edit_distance([], []) == 0
    assert stats.edit_distance(["a", "b", "c"], ["a", "b", "c"]) == 0
    assert stats.edit_distance(["a", "b", "c"], ["a", "x", "c"]) == 1  # substitution
    assert stats.edit_distance(["a", "b", "c"], ["a", "c"]) == 1  # deletion
    assert stats.edit_distance(["a", "b", "c"], ["a", "b", "x", "c"]) == 1  # insertion
    assert stats.edit_distance(["a", "b"], []) == 2
    assert stats.edit_distance([], ["a", "b", "c"]) == 3
    assert stats.edit_distance(["kitten"], ["sitting"]) == 1  # words, not letters


def test_word_error_rate_on_known_strings() -> None:
    ref = "And so my fellow Americans, ask not what your country can do for you."
    # Case and punctuation do not count.
    assert (
        stats.word_error_rate(
            ref, "and so my fellow americans ask not what your country can do for you"
        )
        == 0.0
    )
    # One substitution in 14 reference words.
    assert stats.word_error_rate(
        ref, "And so my fellow Americans, ask not what the country can do for you."
    ) == pytest.approx(1 / 14)
    # Two deletions ("so", "my") and one insertion ("please") over 14 words.
    assert stats.word_error_rate(
        ref, "And fellow Americans ask not what your country can do for you please"
    ) == pytest.approx(3 / 14)
    assert stats.word_error_rate(
        "How many legs does a spider have?", "How many legs does the spider have?"
    ) == pytest.approx(1 / 7)
    # Nothing recognised: every word deleted.
    assert stats.word_error_rate("one two three", "") == 1.0
    # Insertions can push WER above 1.
    assert stats.word_error_rate("yes", "yes yes yes") == 2.0
    assert stats.word_errors("What is the capital of France?", "what is capital of paris") == (2, 6)


def test_word_error_rate_needs_a_reference() -> None:
    with pytest.raises(ValueError, match="reference"):
        stats.word_error_rate(" ,. ", "anything")


def test_percentile_interpolates_linearly_like_numpy() -> None:
    assert stats.percentile([], 50) is None
    assert stats.percentile([7.0], 50) == 7.0
    assert stats.percentile([7.0], 95) == 7.0
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile([4, 1, 3, 2], 50) == 2.5  # order does not matter
    assert stats.percentile([1, 2, 3, 4], 0) == 1
    assert stats.percentile([1, 2, 3, 4], 100) == 4
    assert stats.percentile([10, 20, 30, 40, 50], 95) == pytest.approx(48.0)
    assert stats.percentile(range(1, 101), 95) == pytest.approx(95.05)
    data = [3.1, 0.4, 9.9, 5.0, 5.0, 12.5, 1.2]
    for q in (5, 25, 50, 75, 90, 95, 99):
        assert stats.percentile(data, q) == pytest.approx(float(np.percentile(data, q)))
    with pytest.raises(ValueError):
        stats.percentile([1, 2], 101)


def test_summarize_skips_missing_values() -> None:
    s = stats.summarize([100.0, None, 300.0, 200.0, None, 400.0])
    assert s == {"n": 4, "mean": 250.0, "p50": 250.0, "p95": 385.0, "min": 100.0, "max": 400.0}
    assert stats.summarize([None]) == {
        "n": 0,
        "mean": None,
        "p50": None,
        "p95": None,
        "min": None,
        "max": None,
    }


def test_trim_silence_keeps_the_speech_and_a_little_padding() -> None:
    rate = 1000
    quiet = np.full(500, 0.001, np.float32)  # room noise, -52 dB under the speech
    loud = np.full(300, 0.4, np.float32)
    clip = np.concatenate([quiet, loud, quiet])
    trimmed = workload.trim_silence(clip, rate, pad_ms=30)
    assert trimmed.size == 300 + 2 * 30
    assert float(trimmed.max()) == pytest.approx(0.4)
    assert trimmed[-31] == pytest.approx(0.4)  # the last loud sample, then the padding
    assert workload.trim_silence(np.zeros(3, np.float32), rate).size == 3  # shorter than a frame


def test_trim_silence_keeps_a_soft_first_sound_when_asked() -> None:
    """Bug: the -20 dB cut took the soft first consonant of human Mandarin clips (希 of
    希望) off before the server could hear it; `lead_db` cuts the lead only under that."""
    rate = 1000
    quiet = np.full(500, 0.001, np.float32)  # room noise, -52 dB
    soft = np.full(100, 0.02, np.float32)  # a fricative, -26 dB
    loud = np.full(300, 0.4, np.float32)
    clip = np.concatenate([quiet, soft, loud, soft, quiet])
    assert workload.trim_silence(clip, rate, pad_ms=0).size == 300
    kept = workload.trim_silence(clip, rate, pad_ms=0, lead_db=-40)
    assert kept.size == 400 and kept[0] == pytest.approx(0.02)  # the end is cut as before
    assert kept[-1] == pytest.approx(0.4)


def test_registered_in_the_cli_with_quick_and_json() -> None:
    assert BENCHES["voice"].module == "bench.voice.voice"
    args = build_parser().parse_args(
        ["bench", "voice", "--quick", "--json", "out.json", "--llm-backend", "transformers"]
    )
    assert isinstance(args, argparse.Namespace)
    assert (args.what, args.quick, args.json, args.llm_backend) == (
        "voice",
        True,
        "out.json",
        "transformers",
    )
    assert args.sessions == "1,4"
    assert voice.__doc__ is not None and voice.__doc__.splitlines()[0].strip()


def test_transport_is_websocket_alone_unless_given() -> None:
    args = build_parser().parse_args(["bench", "voice", "--quick"])
    assert args.transport is None
    assert transports.parse_transport(None) is None  # today's report, unchanged
    assert transports.parse_transport("webrtc") == ["webrtc"]
    assert transports.parse_transport("both") == ["websocket", "webrtc"]
    args = build_parser().parse_args(["bench", "voice", "--transport", "both"])
    assert args.transport == "both"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "voice", "--transport", "carrier-pigeon"])


def _level(p50: float, p95: float, cores: float, audible: float = 0.0) -> dict[str, object]:
    return {
        "voice_to_voice_ms": {"p50": p50, "p95": p95, "n": 4},
        "voice_to_voice_audible_ms": {"p50": p50 + audible, "p95": p95 + audible, "n": 4},
        "cpu": {
            "server": {"cores_per_session": cores},
            "client": {"cores_per_session": cores / 2},
        },
    }


def _summary(p50: float) -> dict[str, float]:
    return {"p50": p50, "p95": p50 + 10}


def test_compare_transports_subtracts_the_websocket_and_checks_the_targets() -> None:
    results = {
        "websocket": {
            "concurrency": {
                "sessions_1": _level(880, 1000, 0.2, audible=20),  # its first delta sooner
                "sessions_4": _level(950, 1100, 0.15),
            },
            "barge_in": {
                "measured": 2,
                "to_last_audio_delta_ms": _summary(300),
                "to_response_done_ms": _summary(320),
            },
        },
        "webrtc": {
            "concurrency": {
                "sessions_1": _level(920, 1010, 0.3),
                "sessions_4": _level(1000, 1200, 0.2),
            },
            "barge_in": {
                "measured": 2,
                "to_last_audio_delta_ms": _summary(140),
                "to_response_done_ms": _summary(330),
                "to_output_audio_buffer_cleared_ms": _summary(100),
            },
        },
    }
    out = transports.compare_transports(results)
    one, four = out["levels"]["sessions_1"], out["levels"]["sessions_4"]
    assert one["webrtc_minus_websocket"]["voice_to_voice_audible_p50_ms"] == 20
    assert one["webrtc_minus_websocket"]["voice_to_voice_p50_ms"] == 40
    assert one["webrtc_minus_websocket"]["server_cores_per_session"] == pytest.approx(0.1)
    assert one["voice_to_voice_p50_target_met"] is True
    assert four["webrtc_minus_websocket"]["voice_to_voice_p95_ms"] == 100
    assert four["voice_to_voice_p50_target_met"] is False  # 50 ms over
    assert out["barge_in"]["webrtc"]["to_output_audio_buffer_cleared_ms"]["p50"] == 100
    assert out["barge_in"]["webrtc_stop_target_met"] is True
    assert list(out["levels"]) == ["sessions_1", "sessions_4"]


def test_compare_one_transport_has_no_difference() -> None:
    out = transports.compare_transports(
        {"webrtc": {"concurrency": {"sessions_1": _level(1, 2, 0.1)}}}
    )
    assert "webrtc_minus_websocket" not in out["levels"]["sessions_1"]
    assert out["barge_in"] == {}


def test_the_first_audible_5_ms_of_pcm() -> None:
    quiet, loud = bytes(960), (np.ones(480, np.int16) * 1000).tobytes()  # 20 ms each
    assert common.first_audible_ms(quiet * 3 + loud) == 60.0
    assert common.first_audible_ms(loud) == 0.0
    assert common.first_audible_ms(bytes(480) + loud) == 10.0  # inside a 20 ms frame
    assert common.first_audible_ms(bytes(480) + loud, rate=48_000) == 5.0
    assert common.first_audible_ms(quiet * 2) is None and common.first_audible_ms(b"") is None


def test_a_player_sounds_the_first_audible_sample_after_the_silence_before_it() -> None:
    """Deltas played back to back from the first's arrival: a delta that comes late is
    waited for; the answer is heard at its first audible frame, not its first delta."""

    def delta(ms: float, audible: float | None) -> dict[str, object]:
        return {connection.DELTA_MS: ms, connection.DELTA_AUDIBLE_MS: audible}

    assert connection.heard_at([(10.0, delta(40, None)), (10.01, delta(200, 60))]) == (
        pytest.approx(10.1)  # 40 ms of the first, then 60 ms into the second
    )
    late = [(10.0, delta(40, None)), (10.5, delta(200, 20))]  # the player waited 460 ms
    assert connection.heard_at(late) == pytest.approx(10.52)
    assert connection.heard_at([(10.0, delta(40, None))]) is None
    assert connection.heard_at([]) is None


def test_a_decoded_frame_is_audible_above_the_noise_floor_from_where_its_sound_starts() -> None:
    """A 48 kHz stereo frame as aiortc's decoder gives it (interleaved): silent, at the
    noise floor, or loud from 15 ms on (the whole frame counts, not its first half)."""
    from av import AudioFrame

    def frame(left: np.ndarray) -> AudioFrame:
        interleaved = np.repeat(left.astype(np.int16), 2).reshape(1, -1)
        out = AudioFrame.from_ndarray(interleaved, format="s16", layout="stereo")
        out.sample_rate = 48_000
        return out

    assert rtc_connection.frame_audible_ms(frame(np.zeros(960))) is None
    assert rtc_connection.frame_audible_ms(frame(np.full(960, 20))) is None
    late = np.concatenate([np.zeros(720), np.full(240, 1000)])
    assert rtc_connection.frame_audible_ms(frame(late)) == 15.0


def test_process_cpu_time_of_this_process_grows() -> None:
    import os

    before = cpu.process_cpu_s(os.getpid())
    assert before is not None and before > 0
    sum(i * i for i in range(2_000_000))  # some CPU
    after = cpu.process_cpu_s(os.getpid())
    assert after is not None and after >= before
    assert cpu.process_cpu_s(2**22 + 12345) is None  # no such process
    meter = cpu.CpuMeter(os.getpid())
    meter.start()
    got = meter.stop(sessions=4)
    assert set(got) == {"cpu_s", "wall_s", "cores", "cores_per_session"}


def test_the_rtc_microphone_sends_speech_then_silence() -> None:
    """`say` resolves with the times of its first and last chunk; silence around it."""
    import asyncio

    async def main() -> None:
        conn = rtc_connection.RtcConn()
        chunk = 960  # 20 ms at 24 kHz
        speech = b"\x01\x00" * 700  # 1.46 chunks
        assert conn.next_chunk(chunk, 1.0) == bytes(chunk)
        said = asyncio.ensure_future(conn.say(speech))
        await asyncio.sleep(0)
        assert conn.next_chunk(chunk, 2.0) == speech[:chunk]
        assert not said.done()
        assert conn.next_chunk(chunk, 2.02) == speech[chunk:] + bytes(2 * chunk - len(speech))
        assert await said == (2.0, 2.02)
        assert conn.next_chunk(chunk, 2.04) == bytes(chunk)

    asyncio.run(main())


def test_paired_turns_are_split_into_parts_and_differenced_pair_by_pair() -> None:
    def turn(heard: float, stopped: float, server: float, status: str = "completed") -> Any:
        return {
            "status": status,
            "voice_to_voice_audible_ms": heard,
            "speech_end_to_speech_stopped_event_ms": stopped,
            "server": {"speech_stopped_to_first_audio_ms": server},
        }

    pairs = [
        {"websocket": turn(700.0, 450.0, 200.0), "webrtc": turn(740.0, 470.0, 205.0)},
        {"websocket": turn(900.0, 460.0, 380.0), "webrtc": turn(920.0, 480.0, 370.0)},
        {"websocket": turn(600.0, 400.0, 150.0), "webrtc": turn(0.0, 0.0, 0.0, "cancelled")},
    ]
    out = transports.paired_summary(pairs)
    assert (out["pairs"], out["answered"]) == (3, 2)  # a pair counts only when both answered
    heard = out["voice_to_voice_audible_ms"]
    assert heard["webrtc_minus_websocket"]["n"] == 2
    assert heard["webrtc_minus_websocket"]["p50"] == pytest.approx(30.0)
    # the way back is the rest: 700 - 450 - 200 = 50 against 740 - 470 - 205 = 65
    back = out["first_audio_to_heard_ms"]
    assert back["websocket"]["min"] == 50.0 and back["webrtc"]["min"] == 65.0
    assert out["target_met"] is True  # the pairs' P50 difference, 30 ms, is at the margin
    assert heard["webrtc_minus_websocket"]["p50_ci90"] is None  # two pairs say nothing
    assert out["target_verdict"] is None


def test_paired_turns_judge_the_target_by_the_p50s_interval() -> None:
    def pair(gap: float) -> Any:
        turn = {"status": "completed", "speech_end_to_speech_stopped_event_ms": 400.0}
        return {
            "websocket": turn | {"voice_to_voice_audible_ms": 700.0},
            "webrtc": turn | {"voice_to_voice_audible_ms": 700.0 + gap},
        }

    # 16 pairs: the interval is the 5th to the 12th smallest difference
    gaps = [-40.0, -20.0, -10.0, 0.0, 5.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 25.0, 60, 70, 80, 90]
    out = transports.paired_summary([pair(g) for g in gaps])
    assert out["voice_to_voice_audible_ms"]["webrtc_minus_websocket"]["p50_ci90"] == [5.0, 25.0]
    assert out["target_verdict"] == "met"
    out = transports.paired_summary([pair(g + 10) for g in gaps])  # 15 .. 35: holds 30
    assert out["target_met"] is True and out["target_verdict"] == "within noise"
    out = transports.paired_summary([pair(g + 30) for g in gaps])  # 35 .. 55
    assert out["target_verdict"] == "missed"
    out = transports.paired_summary([pair(g + 5.04) for g in gaps])  # 10.04 .. 30.04
    heard = out["voice_to_voice_audible_ms"]["webrtc_minus_websocket"]
    assert heard["p50_ci90"] == [10.0, 30.0]  # shown rounded,
    assert out["target_verdict"] == "within noise"  # judged as measured


def test_the_medians_interval_is_the_sign_tests() -> None:
    # n = 16: P(B < 5) = 0.038, so [x(5), x(12)] covers 92%; j = 6 would cover only 79%
    assert stats.median_interval(range(1, 17)) == [5, 12]
    assert stats.median_interval(range(48, 0, -1)) == [18, 31]  # order does not matter
    assert stats.median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) == [1.0, 5.0]  # covers 94%
    assert stats.median_interval([1.0, 2.0, 3.0, 4.0]) is None  # [min, max] covers 88%
    assert stats.median_interval([]) is None
    assert stats.median_interval(range(1, 17), confidence=0.5) == [7, 10]
    with pytest.raises(ValueError, match="confidence"):
        stats.median_interval([1.0], confidence=1.0)


def test_a_paired_gap_is_the_other_side_minus_the_websocket_per_pair() -> None:
    """Phone calls and boards against the WebSocket (bench/voice/phone.py, xiaozhi.py)."""
    key = "voice_to_voice_audible_ms"
    pairs = [{"websocket": {key: 700.0}, "twilio": {key: 700.0 + g}} for g in range(1, 6)]
    pairs.append({"websocket": {key: 650.0}, "twilio": {key: None}})  # no answer heard
    sides, gap = stats.paired_gap(pairs, "twilio")
    assert (sides["websocket"]["n"], sides["twilio"]["n"]) == (6, 5)
    assert (gap["n"], gap["p50"], gap["p50_ci90"]) == (5, 3.0, [1.0, 5.0])
