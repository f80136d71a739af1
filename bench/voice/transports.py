"""WebRTC against the WebSocket on the same run: the numbers issue #28 asks for and its
targets (voice-to-voice within 30 ms at P50, barge-in stop within 150 ms on WebRTC)."""

from __future__ import annotations

from typing import Any

TRANSPORTS = ("websocket", "webrtc")
# WebRTC's voice-to-voice P50 may exceed the WebSocket's by this much
V2V_P50_MARGIN_MS = 30.0
# speech sent over an answer -> the answer's audio stops coming, on WebRTC
RTC_BARGE_IN_STOP_MS = 150.0


def parse_transport(value: str | None) -> list[str] | None:
    """--transport: None (not given) keeps the WebSocket-only report; "both" is each."""
    if value is None:
        return None
    if value == "both":
        return list(TRANSPORTS)
    if value not in TRANSPORTS:
        raise ValueError(f"unknown transport {value!r}")
    return [value]


def _get(d: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _diff(a: float | None, b: float | None, digits: int = 1) -> float | None:
    return None if a is None or b is None else round(a - b, digits)


def compare_transports(results: dict[str, Any]) -> dict[str, Any]:
    """Per level: P50/P95 on each, WebRTC minus WebSocket, and the server CPU that WebRTC
    adds per session (Opus both ways, SRTP, RTP pacing: all the transport's work, less
    the WebSocket's JSON and base64); the barge-in stop on each; the targets."""
    ws, rtc = results.get("websocket"), results.get("webrtc")
    levels: dict[str, Any] = {}
    names = {*(_get(ws, "concurrency") or {}), *(_get(rtc, "concurrency") or {})}
    for name in sorted(names, key=lambda n: int(n.rsplit("_", 1)[1])):
        row: dict[str, Any] = {}
        for transport, r in (("websocket", ws), ("webrtc", rtc)):
            level = _get(r, "concurrency", name)
            if level is None:
                continue
            row[transport] = {
                "voice_to_voice_ms": {
                    k: level["voice_to_voice_ms"].get(k) for k in ("p50", "p95", "n")
                },
                "server_cores_per_session": _get(level, "cpu", "server", "cores_per_session"),
                "client_cores_per_session": _get(level, "cpu", "client", "cores_per_session"),
            }
            for key in ("voice_to_voice_audible_ms", "voice_to_voice_started_event_ms"):
                if key in level:
                    row[transport][key] = {k: level[key].get(k) for k in ("p50", "p95")}
        if "websocket" in row and "webrtc" in row:
            audible = [
                _get(row, t, "voice_to_voice_audible_ms", "p50") for t in ("webrtc", "websocket")
            ]
            # to the first sound on both (the target's measure); before, the WebSocket's
            # first delta against WebRTC's first audible frame
            p50_delta = _diff(*audible)
            row["webrtc_minus_websocket"] = {
                "voice_to_voice_audible_p50_ms": p50_delta,
                "voice_to_voice_p50_ms": _diff(
                    row["webrtc"]["voice_to_voice_ms"]["p50"],
                    row["websocket"]["voice_to_voice_ms"]["p50"],
                ),
                "voice_to_voice_p95_ms": _diff(
                    row["webrtc"]["voice_to_voice_ms"]["p95"],
                    row["websocket"]["voice_to_voice_ms"]["p95"],
                ),
                "server_cores_per_session": _diff(
                    row["webrtc"]["server_cores_per_session"],
                    row["websocket"]["server_cores_per_session"],
                    4,
                ),
                "client_cores_per_session": _diff(
                    row["webrtc"]["client_cores_per_session"],
                    row["websocket"]["client_cores_per_session"],
                    4,
                ),
            }
            row["voice_to_voice_p50_target_met"] = (
                None if p50_delta is None else p50_delta <= V2V_P50_MARGIN_MS
            )
        levels[name] = row
    barge: dict[str, Any] = {}
    for transport, r in (("websocket", ws), ("webrtc", rtc)):
        b = _get(r, "barge_in")
        if b is None:
            continue
        barge[transport] = {
            "measured": b["measured"],
            "to_last_audio_ms": {k: b["to_last_audio_delta_ms"].get(k) for k in ("p50", "p95")},
            "to_response_done_ms": {k: b["to_response_done_ms"].get(k) for k in ("p50", "p95")},
        }
        for key in (
            "to_speech_started_ms",
            "to_output_audio_buffer_cleared_ms",
            "cleared_to_last_audio_ms",
        ):
            if key in b:
                barge[transport][key] = {k: b[key].get(k) for k in ("p50", "p95")}
    stop = _get(barge, "webrtc", "to_last_audio_ms", "p50")
    if stop is not None:
        barge["webrtc_stop_target_met"] = stop <= RTC_BARGE_IN_STOP_MS
    return {
        "targets_ms": {
            "webrtc_voice_to_voice_p50_over_websocket": V2V_P50_MARGIN_MS,
            "webrtc_barge_in_stop": RTC_BARGE_IN_STOP_MS,
        },
        "levels": levels,
        "barge_in": barge,
    }


# What a paired turn is split into, each on the client's clock but the server's part:
# hearing the end of speech (the speech's last sample sent -> its speech_stopped event
# arrives), the server's answer (speech_stopped -> first audio handed to the transport),
# and the way back (the rest: the audio's trip, the track's frame clock, Opus, less the
# event's own trip).
PAIRED_PARTS = (
    "voice_to_voice_audible_ms",
    "speech_end_to_speech_stopped_event_ms",
    "server_speech_stopped_to_first_audio_ms",
    "first_audio_to_heard_ms",
)


def turn_parts(turn: dict[str, Any]) -> dict[str, float | None]:
    """`PAIRED_PARTS` of one answered voice turn (None where a part is missing)."""
    heard = turn.get("voice_to_voice_audible_ms")
    stopped = turn.get("speech_end_to_speech_stopped_event_ms")
    server = (turn.get("server") or {}).get("speech_stopped_to_first_audio_ms")
    back = None
    if heard is not None and stopped is not None and server is not None:
        back = round(heard - stopped - server, 1)
    return dict(zip(PAIRED_PARTS, (heard, stopped, server, back), strict=True))


def paired_summary(pairs: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """The same clip said over each transport one after the other (`pairs`: one dict per
    clip said, transport -> its turn), so the machine's drift and the answer's length fall
    on both alike: each part's P50 per transport and the P50 of the pairs' differences
    (WebRTC minus WebSocket), the target judged on the latter."""
    from bench.voice.stats import median_interval, summarize

    answered = [
        p
        for p in pairs
        if all(p.get(t, {}).get("status") in ("completed", "incomplete") for t in TRANSPORTS)
    ]
    parts = [{t: turn_parts(p[t]) for t in TRANSPORTS} for p in answered]
    out: dict[str, Any] = {"pairs": len(pairs), "answered": len(answered)}
    for part in PAIRED_PARTS:
        row = {t: summarize(x[t][part] for x in parts) for t in TRANSPORTS}
        diffs = [
            b - a
            for x in parts
            if (a := x["websocket"][part]) is not None and (b := x["webrtc"][part]) is not None
        ]
        interval = median_interval(diffs)
        row["webrtc_minus_websocket"] = summarize(diffs) | {
            "p50_ci90": None if interval is None else [round(x, 1) for x in interval]
        }
        out[part] = row
        if part == "voice_to_voice_audible_ms":  # judged unrounded
            out["target_verdict"] = target_verdict(interval, V2V_P50_MARGIN_MS)
    gap = out["voice_to_voice_audible_ms"]["webrtc_minus_websocket"]["p50"]
    out["target_ms"] = V2V_P50_MARGIN_MS
    out["target_met"] = None if gap is None else gap <= V2V_P50_MARGIN_MS
    return out


def target_verdict(interval: list[float] | None, target: float) -> str | None:
    """A P50 against its target, told by the P50's 90% interval: "met" (the whole interval
    within it), "missed" (the whole interval over it), "within noise" (the interval holds
    the target: the pairs cannot say; more rounds can); None with too few pairs."""
    if interval is None:
        return None
    if interval[1] <= target:
        return "met"
    return "missed" if interval[0] > target else "within noise"
