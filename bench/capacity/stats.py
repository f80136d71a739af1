"""`bench capacity`'s statistics: the levels asked for, the capacity they show, r1voice
against the peer, and the breakdowns of a level's turns (by clip, ending together)."""

from __future__ import annotations

from typing import Any

# r1voice's targets against the peer (issue #30)
CAPACITY_RATIO_TARGET = 2.0
TOGETHER_S = 0.3  # two speakers finishing this close "end together" (issue #30)
ONE_SESSION_P50_RATIO_TARGET = 0.8


def compare(ours: list[dict[str, Any]], peer: list[dict[str, Any]]) -> dict[str, Any]:
    """r1voice against the peer: capacity ratio, 1-session P50 ratio, and the targets."""
    cap, peer_cap = capacity(ours)["sessions"], capacity(peer)["sessions"]
    p50 = next((lv["voice_to_voice_ms"]["p50"] for lv in ours if lv["sessions"] == 1), None)
    peer_p50 = next((lv["voice_to_voice_ms"]["p50"] for lv in peer if lv["sessions"] == 1), None)
    cap_ratio = round(cap / peer_cap, 2) if peer_cap else None
    p50_ratio = round(p50 / peer_p50, 3) if p50 is not None and peer_p50 else None
    return {
        "capacity": {"r1voice": cap, "pipecat": peer_cap, "ratio": cap_ratio},
        "one_session_p50_ms": {"r1voice": p50, "pipecat": peer_p50, "ratio": p50_ratio},
        "targets": {
            "capacity_ratio_at_least": CAPACITY_RATIO_TARGET,
            "one_session_p50_ratio_at_most": ONE_SESSION_P50_RATIO_TARGET,
            "capacity_ratio_met": None
            if cap_ratio is None and cap == 0
            else (cap_ratio is None or cap_ratio >= CAPACITY_RATIO_TARGET),
            "one_session_p50_met": None
            if p50_ratio is None
            else p50_ratio <= ONE_SESSION_P50_RATIO_TARGET,
        },
    }


def parse_levels(text: str) -> list[int]:
    """ "1,2,4" -> [1, 2, 4]: ascending, each at least 1, or a ValueError naming the bad one."""
    levels = []
    for part in text.split(","):
        if not part.strip():
            continue
        n = int(part)
        if n < 1:
            raise ValueError(f"--sessions: every level must be at least 1, got {n}")
        levels.append(n)
    if not levels or levels != sorted(set(levels)):
        raise ValueError(f"--sessions: give ascending levels without repeats, got {text!r}")
    return levels


def capacity(levels: list[dict[str, Any]]) -> dict[str, Any]:
    """The largest N whose level held (P95 within the target, no failed turn); 0 if none."""
    held = [lv["sessions"] for lv in levels if lv["held"]]
    broke = [lv["sessions"] for lv in levels if not lv["held"]]
    return {"sessions": max(held, default=0), "first_broken": min(broke, default=None)}


def between(turn: dict[str, Any], start: str, end: str) -> float | None:
    """ms from stage `start` to `end` of a turn's server metrics ("speech_stopped": 0)."""
    server = turn.get("server") or {}
    a, b = (
        0.0 if x == "speech_stopped" else server.get(f"speech_stopped_to_{x}_ms")
        for x in (start, end)
    )
    return None if a is None or b is None else b - a


def was_answered(turn: dict[str, Any]) -> bool:
    """A whole answer (completed, or cut at its max_output_tokens) that was heard."""
    return (
        turn["status"] in ("completed", "incomplete") and turn.get("voice_to_voice_ms") is not None
    )


def by_clip(turns: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Voice-to-voice per clip asked, the slowest P50 first: which question or recording
    sets a level's P95 (a human clip whose last sentence the turn model doubts waits
    semantic_vad's doubt wait, whatever the load)."""
    from bench.voice.stats import summarize

    clips: dict[str, list[float]] = {}
    for t in turns:
        clips.setdefault(t["clip"], []).append(t["voice_to_voice_ms"])
    rows = {clip: summarize(times) for clip, times in clips.items()}
    return dict(sorted(rows.items(), key=lambda row: -(row[1]["p50"] or 0.0)))


def ending_together(sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Voice-to-voice of the turns whose speech ended within TOGETHER_S of another
    session's, against the rest: issue #30's two turns ending together against a lone
    turn (`sessions`: each session's answered turns, with `speech_end` on one clock)."""
    from bench.voice.stats import summarize

    ends = [(i, t["speech_end"]) for i, turns in enumerate(sessions) for t in turns]
    alone: list[dict[str, Any]] = []
    together: list[dict[str, Any]] = []
    for i, turns in enumerate(sessions):
        for t in turns:
            near = any(j != i and abs(end - t["speech_end"]) <= TOGETHER_S for j, end in ends)
            (together if near else alone).append(t)
    lone, both = (summarize(t["voice_to_voice_ms"] for t in part) for part in (alone, together))
    ratio = round(both["p50"] / lone["p50"], 2) if both["p50"] is not None and lone["p50"] else None

    def stages(part: list[dict[str, Any]]) -> dict[str, float | None]:
        """Which part of the turn the others slow: its end's detection or the answer."""
        wait = summarize(t.get("speech_end_to_speech_stopped_event_ms") for t in part)
        server = summarize(
            (t.get("server") or {}).get("speech_stopped_to_first_audio_ms") for t in part
        )
        # the server's part, split: the LLM writing the first clause (negative when a
        # speculative answer had it before the turn ended), its synthesis with the wait
        # for the TTS, and the hold until the turn ends or the track takes it
        split = {
            f"{a}_to_{b}_p50_ms": summarize(between(t, a, b) for t in part)["p50"]
            for a, b in (
                ("speech_stopped", "first_clause"),
                ("first_clause", "first_synthesized"),
                ("first_synthesized", "first_audio"),
            )
        }
        return {"turn_end_wait_p50_ms": wait["p50"], "server_part_p50_ms": server["p50"], **split}

    return {
        "window_s": TOGETHER_S,
        "alone": lone,
        "together": both,
        "p50_ratio": ratio,
        "stages": {"alone": stages(alone), "together": stages(together)},
    }
