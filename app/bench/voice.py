"""Voice path end to end: voice-to-voice latency, stage breakdown, ASR WER, barge-in.

Starts a real server (`python -m app.cli serve`) as a subprocess, waits for
/v2/health/ready, then drives real Realtime WebSocket clients that behave like a
microphone: 20 ms chunks of PCM16 24 kHz mono sent at real-time pace, speech then
silence, without pause, while the answers stream back. Server VAD ends each turn.

Measured on the client (monotonic clock of this process):
- voice-to-voice: the chunk holding the last speech sample is sent -> the first
  `response.audio.delta` of the answer arrives. It includes the VAD silence window
  (`silence_duration_ms`, 500 ms by default) the server must hear to know the turn ended;
- the server's breakdown from its `r1voice.turn.metrics` event (end of speech ->
  transcript -> first token -> first audio);
- ASR word error rate of the human recordings (and of the synthesized questions);
- barge-in: the first sample of an interruption is sent -> the server stops sending
  the interrupted answer (its last audio delta, and its `response.done` "cancelled").

1 and 4 concurrent sessions (session starts are Poisson arrivals, seeded). Timings are
reported, never asserted; targets are printed next to them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from typing import Any

# Printed next to the results; nothing asserts them.
TARGETS_MS = {
    "voice_to_voice_p50": 800.0,
    "voice_to_voice_p95": 1200.0,
    "barge_in": 500.0,
}

WIRE_RATE = 24_000  # Realtime default input format: PCM16 mono 24 kHz
CHUNK_MS = 20
TTS_VOICE = "piper-en_US-joe-medium"
SPEECH_DIR_PARTS = ("..", "shared", "data", "speech")  # relative to the repository root

# Human recordings (file, cut at seconds, what was said). jfk.flac is cut at 10.35 s,
# after "country" (the rest is crowd noise, which would delay the end of speech).
# multilingual.mp3 is cut at 11.2 s, in the pause after "use," (it switches to German
# 30 s later); the reader skips the parenthesis `(the "Software")` of the MIT licence.
HUMAN_CLIPS: dict[str, tuple[str, float, str]] = {
    "jfk": (
        "jfk.flac",
        10.35,
        "And so my fellow Americans, ask not what your country can do for you, "
        "ask what you can do for your country.",
    ),
    "mit-licence-en": (
        "multilingual.mp3",
        11.2,
        "Permission is hereby granted, free of charge, to any person obtaining a copy of "
        "this software and associated documentation files, to deal in the software without "
        "restriction, including without limitation the rights to use",
    ),
}
QUESTIONS = [
    "What is the capital of France?",
    "How many legs does a spider have?",
    "What color is the sky on a clear day?",
    "Name a fruit that is yellow.",
    "How many days are there in a week?",
    "What is the opposite of hot?",
]
LONG_ANSWER_PROMPT = "Tell me a long story about a dragon and a knight."
LONG_ANSWER_INSTRUCTIONS = (
    "You are a storyteller. Tell long, detailed stories in plain spoken sentences."
)
INTERRUPTION = "Wait, stop please. Tell me something else."

AUDIO_DELTAS = ("response.audio.delta", "response.output_audio.delta")
ANSWER_DONE = ("response.audio_transcript.done", "response.output_audio_transcript.done")
TRANSCRIPT_DONE = "conversation.item.input_audio_transcription.completed"


# --- pure helpers (tested in tests/app/bench/test_voice_bench.py) ---------------------------


def normalize_words(text: str) -> list[str]:
    """Lower case, apostrophes dropped, other punctuation as spaces, split into words."""
    text = text.lower().replace("'", "").replace("’", "")
    return re.sub(r"[^\w\s]|_", " ", text).split()


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Levenshtein distance (substitutions + deletions + insertions) between word lists."""
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(word errors, reference words) after normalization."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    return edit_distance(ref, hyp), len(ref)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER = (substitutions + deletions + insertions) / reference words."""
    errors, n = word_errors(reference, hypothesis)
    if n == 0:
        raise ValueError("the reference has no words; WER is undefined")
    return errors / n


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between closest ranks (numpy's
    default); None for no values."""
    data = sorted(values)
    if not data:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within [0, 100], got {q}")
    k = (len(data) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def summarize(values: Iterable[float | None]) -> dict[str, Any]:
    """n, mean, P50, P95, min, max of the values that are not None (rounded to 0.1)."""
    data = [float(v) for v in values if v is not None]

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 1)

    return {
        "n": len(data),
        "mean": r(sum(data) / len(data)) if data else None,
        "p50": r(percentile(data, 50)),
        "p95": r(percentile(data, 95)),
        "min": r(min(data)) if data else None,
        "max": r(max(data)) if data else None,
    }


def trim_silence(
    samples: Any, rate: int, rel_db: float = -20.0, frame_ms: int = 10, pad_ms: int = 30
) -> Any:
    """Cut leading and trailing frames quieter than `rel_db` below the loudest frame (RMS),
    keeping `pad_ms` around, so that the clip's last sample is speech, not room noise."""
    import numpy as np

    frame = max(rate * frame_ms // 1000, 1)
    n = samples.size // frame
    if n == 0:
        return samples
    rms = np.sqrt(np.mean(samples[: n * frame].reshape(n, frame) ** 2, axis=1))
    loud = np.flatnonzero(rms >= rms.max() * 10 ** (rel_db / 20))
    pad = rate * pad_ms // 1000
    start = max(int(loud[0]) * frame - pad, 0)
    end = min((int(loud[-1]) + 1) * frame + pad, samples.size)
    return samples[start:end]


# --- CLI ----------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-backend",
        choices=["embedded", "transformers"],
        default=None,
        help="passed to `serve` (default: the server's default)",
    )
    parser.add_argument("--llm-model", default=None, help="passed to `serve`")
    parser.add_argument(
        "--sessions",
        default="1,4",
        help="concurrency levels to run, comma separated (default: 1,4)",
    )
    parser.add_argument(
        "--turns", type=int, default=None, help="voice turns per session (default 6, quick 3)"
    )
    parser.add_argument(
        "--turns-concurrent",
        type=int,
        default=None,
        help="voice turns per session when sessions > 1 (default 4, quick 2)",
    )
    parser.add_argument(
        "--barge-in", type=int, default=None, help="barge-in trials (default 5, quick 2)"
    )
    parser.add_argument(
        "--arrival-rate",
        type=float,
        default=2.0,
        help="Poisson arrival rate of session starts, per second (default 2)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds")
    parser.add_argument("--turn-timeout", type=float, default=60.0, help="seconds per turn")
    parser.add_argument("--server-log", default=None, help="keep the server's output here")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    quick = bool(getattr(args, "quick", False))
    plan = _Plan(
        levels=[int(x) for x in str(args.sessions).split(",") if x.strip()],
        turns=args.turns or (3 if quick else 6),
        turns_concurrent=args.turns_concurrent or (2 if quick else 4),
        barge_in=args.barge_in if args.barge_in is not None else (2 if quick else 5),
        arrival_rate=args.arrival_rate,
        seed=args.seed,
        turn_timeout=args.turn_timeout,
        human_clips=["jfk"] if quick else list(HUMAN_CLIPS),
    )
    _log(f"preparing audio ({len(plan.human_clips)} human clips, {len(QUESTIONS)} questions)")
    clips = _prepare_clips(plan.human_clips)
    server = _Server(args)
    result: dict[str, Any] = {"benchmark": "voice", "quick": quick, "targets_ms": TARGETS_MS}
    try:
        server.start()
        result["startup_to_ready_s"] = round(server.wait_ready(args.ready_timeout), 3)
        _log(f"server ready after {result['startup_to_ready_s']} s on port {server.port}")
        result["metadata"] = _metadata(args, server, plan, clips)
        result.update(asyncio.run(_run_clients(server, plan, clips, result["metadata"])))
    finally:
        result["server"] = server.stop()
    _print_summary(result)
    return result


# --- audio ---------------------------------------------------------------------------------


class _Clip:
    """A clip ready to stream: PCM16 bytes at WIRE_RATE, and what is said in it."""

    def __init__(self, name: str, kind: str, text: str, samples: Any) -> None:
        from app.audio import float_to_pcm16

        self.name, self.kind, self.text = name, kind, text
        self.pcm = float_to_pcm16(samples)
        self.duration_s = samples.size / WIRE_RATE


def _speech_dir() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parents[2].joinpath(*SPEECH_DIR_PARTS).resolve()


def _prepare_clips(human: list[str]) -> dict[str, _Clip]:
    import numpy as np
    import soundfile as sf

    from app import model_registry
    from app.audio import resample
    from app.stages.tts import PiperTTS

    clips: dict[str, _Clip] = {}
    folder = _speech_dir()
    for name in human:
        filename, cut_s, text = HUMAN_CLIPS[name]
        path = folder / filename
        if not path.is_file():
            raise SystemExit(f"missing {path}: the benchmark reads human speech from ../shared")
        if path.suffix == ".mp3":
            from faster_whisper import decode_audio

            samples = decode_audio(str(path), sampling_rate=WIRE_RATE)
        else:
            data, rate = sf.read(str(path), dtype="float32", always_2d=True)
            samples = resample(data.mean(axis=1), rate, WIRE_RATE)
        samples = samples[: int(cut_s * WIRE_RATE)]
        clips[name] = _Clip(name, "human", text, trim_silence(samples, WIRE_RATE))
    tts = PiperTTS(model_registry.locate(TTS_VOICE, "tts"), name=TTS_VOICE)
    for i, text in enumerate([*QUESTIONS, INTERRUPTION]):
        samples = np.asarray(tts.synthesize(text, WIRE_RATE), dtype=np.float32)
        name = "interruption" if text == INTERRUPTION else f"q{i + 1}"
        clips[name] = _Clip(name, "tts", text, trim_silence(samples, WIRE_RATE))
    return clips


# --- the server ----------------------------------------------------------------------------


class _Server:
    """`python -m app.cli serve` in a subprocess; output goes to a log file."""

    def __init__(self, args: argparse.Namespace) -> None:
        import sys

        self.port = args.port or _free_port()
        self.command = [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)]
        if args.llm_backend:
            self.command += ["--llm-backend", args.llm_backend]
        if args.llm_model:
            self.command += ["--llm-model", args.llm_model]
        self.log_path = args.server_log
        self.proc: Any = None
        self._log_file: Any = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        import subprocess
        import tempfile
        import time
        from pathlib import Path

        if self.log_path:
            Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "w+b")  # noqa: SIM115 (closed in stop())
        else:
            self._log_file = tempfile.TemporaryFile()  # noqa: SIM115
        root = Path(__file__).resolve().parents[2]
        _log("starting: " + " ".join(self.command))
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.command, cwd=root, stdout=self._log_file, stderr=subprocess.STDOUT
        )

    def log_tail(self, lines: int = 30) -> str:
        if self._log_file is None:
            return ""
        self._log_file.flush()
        self._log_file.seek(0)
        text = self._log_file.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, dict[str, Any]]:
        import json
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.base + path, timeout=timeout) as reply:
                return reply.status, json.loads(reply.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                body = json.loads(exc.read() or b"{}")
            except ValueError:
                body = {}
            return exc.code, body

    def wait_ready(self, timeout: float) -> float:
        """Seconds from process start to the first 200 of /v2/health/ready."""
        import time

        deadline = self.started_at + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the server exited with code {self.proc.returncode} before it was ready:\n"
                    + self.log_tail()
                )
            try:
                status, body = self.get("/v2/health/ready", timeout=2.0)
            except OSError:  # not listening yet
                status, body = 0, {}
            if status == 200:
                return time.monotonic() - self.started_at
            if body.get("error"):
                raise RuntimeError(f"the server failed to load its models: {body['error']}")
            time.sleep(0.1)
        raise RuntimeError(f"the server was not ready after {timeout:.0f} s:\n" + self.log_tail())

    def stop(self) -> dict[str, Any]:
        """Terminate (SIGTERM: uvicorn shuts down gracefully), wait, kill if it hangs."""
        import subprocess
        import time

        info: dict[str, Any] = {"command": self.command}
        if self.proc is not None:
            t0 = time.monotonic()
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    info["killed"] = True
            info["shutdown_s"] = round(time.monotonic() - t0, 3)
            info["exit_code"] = self.proc.returncode
        if self._log_file is not None:
            text = self.log_tail(lines=100_000)
            problems = [
                line
                for line in text.splitlines()
                if re.search(r"\b(ERROR|CRITICAL|Traceback|Exception)\b", line)
            ]
            info["log_problem_lines"] = problems[:20]
            info["log_problem_count"] = len(problems)
            if self.log_path:
                info["log"] = self.log_path
            self._log_file.close()
            self._log_file = None
        return info


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- clients -------------------------------------------------------------------------------


class _Plan:
    def __init__(self, **kw: Any) -> None:
        self.levels: list[int] = kw["levels"]
        self.turns: int = kw["turns"]
        self.turns_concurrent: int = kw["turns_concurrent"]
        self.barge_in: int = kw["barge_in"]
        self.arrival_rate: float = kw["arrival_rate"]
        self.seed: int = kw["seed"]
        self.turn_timeout: float = kw["turn_timeout"]
        self.human_clips: list[str] = kw["human_clips"]


class _Conn:
    """One Realtime WebSocket: a receiver logging (arrival time, event) and a microphone
    sending 20 ms chunks at real-time pace for as long as the connection is open:
    queued speech, otherwise silence."""

    def __init__(self, ws: Any) -> None:
        import asyncio

        self.ws = ws
        self.log: list[tuple[float, dict[str, Any]]] = []
        self.closed = False
        self.mic_max_lag_ms = 0.0
        self.session: dict[str, Any] = {}
        self.mic_error: str | None = None
        self._new = asyncio.Event()
        self._speech: list[tuple[bytes, asyncio.Future[tuple[float, float]]]] = []
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(cls, url: str) -> _Conn:
        import asyncio

        import websockets
        from websockets.typing import Subprotocol

        ws = await websockets.connect(
            url, subprotocols=[Subprotocol("realtime")], max_size=None, open_timeout=30
        )
        conn = cls(ws)
        conn._tasks = [
            asyncio.create_task(conn._receive()),
            asyncio.create_task(conn._microphone()),
        ]
        _, _, created = await conn.wait_for(lambda t, e: e["type"] == "session.created", 0, 30)
        conn.session = created["session"]
        return conn

    async def close(self) -> None:
        import asyncio
        import contextlib

        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.ws.close()

    async def send(self, event: dict[str, Any]) -> None:
        import json

        await self.ws.send(json.dumps(event))

    async def _receive(self) -> None:
        import json
        import time

        try:
            async for message in self.ws:
                t = time.monotonic()
                event = json.loads(message)
                if event.get("type") in AUDIO_DELTAS:  # keep the log small: size, not audio
                    event["delta"] = len(event.get("delta") or "")
                self.log.append((t, event))
                self._new.set()
        finally:
            self.closed = True
            self._new.set()

    async def _microphone(self) -> None:
        try:
            await self._microphone_loop()
        except Exception as exc:  # the connection is gone: nobody waits forever on say()
            self.mic_error = f"{type(exc).__name__}: {exc}"
            for _, done in self._speech:
                if not done.done():
                    done.set_exception(ConnectionError(f"the microphone stopped: {self.mic_error}"))
            self._speech.clear()

    async def _microphone_loop(self) -> None:
        import asyncio
        import base64
        import json
        import time

        chunk_bytes = WIRE_RATE * CHUNK_MS // 1000 * 2
        silence = json.dumps(
            {
                "type": "input_audio_buffer.append",
                "audio": base64.b64encode(bytes(chunk_bytes)).decode(),
            }
        )
        t0 = time.monotonic()
        sent = 0
        offset = 0  # into the speech being sent
        first_at = 0.0
        while True:
            due = t0 + sent * CHUNK_MS / 1000
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:  # late: send at once, like a microphone's buffered audio
                self.mic_max_lag_ms = max(self.mic_max_lag_ms, -delay * 1000)
            if not self._speech:
                await self.ws.send(silence)
                sent += 1
                continue
            pcm, done = self._speech[0]
            piece = pcm[offset : offset + chunk_bytes]
            piece += bytes(chunk_bytes - len(piece))  # the last chunk ends in silence
            await self.ws.send(
                json.dumps(
                    {"type": "input_audio_buffer.append", "audio": base64.b64encode(piece).decode()}
                )
            )
            now = time.monotonic()
            sent += 1
            if offset == 0:
                first_at = now
            offset += chunk_bytes
            if offset >= len(pcm):
                self._speech.pop(0)
                offset = 0
                if not done.done():
                    done.set_result((first_at, now))

    async def say(self, pcm: bytes) -> tuple[float, float]:
        """Queue speech on the microphone; returns when (first chunk, last chunk) were sent."""
        import asyncio

        if self.mic_error is not None:
            raise ConnectionError(f"the microphone stopped: {self.mic_error}")
        done: asyncio.Future[tuple[float, float]] = asyncio.get_running_loop().create_future()
        self._speech.append((pcm, done))
        return await done

    async def wait_for(
        self, match: Any, start: int, timeout: float
    ) -> tuple[int, float, dict[str, Any]]:
        """The first logged event from index `start` with match(arrival, event) true:
        (index, arrival time, event). TimeoutError, or ConnectionError if closed."""
        import asyncio

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        i = start
        while True:
            while i < len(self.log):
                t, event = self.log[i]
                if match(t, event):
                    return i, t, event
                i += 1
            if self.closed:
                raise ConnectionError("the server closed the connection")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError
            self._new.clear()
            try:
                await asyncio.wait_for(self._new.wait(), remaining)
            except TimeoutError:
                raise TimeoutError from None

    def events(self, start: int, end: int | None = None) -> list[tuple[float, dict[str, Any]]]:
        return self.log[start:end]


def _ms(t: float | None, since: float | None) -> float | None:
    return None if t is None or since is None else round((t - since) * 1000, 1)


async def _voice_turn(conn: _Conn, clip: _Clip, timeout: float) -> dict[str, Any]:
    """Say the clip, keep the microphone on (silence), wait for the answer and its metrics."""
    start = len(conn.log)
    turn: dict[str, Any] = {
        "clip": clip.name,
        "kind": clip.kind,
        "speech_s": round(clip.duration_s, 2),
    }
    _, last_sent = await conn.say(clip.pcm)
    turn["speech_end"] = last_sent
    try:
        # The answer to the whole utterance is the first response created after its end
        # (answers to a part of it, before a pause, are created earlier and cancelled).
        i_created, _, created = await conn.wait_for(
            lambda t, e: e["type"] == "response.created" and t > last_sent, start, timeout
        )
        rid = created["response"]["id"]
        i_done, t_done, done = await conn.wait_for(
            lambda t, e: e["type"] == "response.done" and e["response"]["id"] == rid,
            i_created,
            timeout,
        )
        turn["status"] = done["response"]["status"]
        try:
            _, _, metrics = await conn.wait_for(
                lambda t, e: e["type"] == "r1voice.turn.metrics" and e.get("response_id") == rid,
                i_done,
                5.0,
            )
            turn["server"] = {
                k: metrics.get(k)
                for k in (
                    "speech_stopped_to_transcript_ms",
                    "speech_stopped_to_first_token_ms",
                    "speech_stopped_to_first_audio_ms",
                    "audio_ms",
                    "status",
                )
            }
        except TimeoutError:
            turn["server"] = None
            turn["problem"] = "no r1voice.turn.metrics within 5 s after response.done"
    except TimeoutError:
        turn["status"] = "timeout"
        turn["problem"] = f"no complete answer within {timeout:.0f} s"
        rid, t_done = None, None
    events = conn.events(start)
    first_audio = next(
        (t for t, e in events if e["type"] in AUDIO_DELTAS and e.get("response_id") == rid), None
    )
    transcripts = [e.get("transcript") or "" for _, e in events if e["type"] == TRANSCRIPT_DONE]
    stopped = [t for t, e in events if e["type"] == "input_audio_buffer.speech_stopped"]
    turn.update(
        {
            "voice_to_voice_ms": _ms(first_audio, last_sent),
            "speech_end_to_speech_stopped_event_ms": _ms(
                stopped[-1] if stopped else None, last_sent
            ),
            "speech_end_to_response_done_ms": _ms(t_done, last_sent),
            "transcript": transcripts[-1] if transcripts else None,
            "transcripts_completed": len(transcripts),
            "items_deleted": sum(1 for _, e in events if e["type"] == "conversation.item.deleted"),
            "errors": [e.get("error") for _, e in events if e["type"] == "error"],
            "answer": next(
                (
                    e.get("transcript")
                    for _, e in events
                    if e["type"] in ANSWER_DONE and e.get("response_id") == rid
                ),
                None,
            ),
        }
    )
    return turn


async def _pause_after(speech_end: float | None, merge_window_s: float) -> None:
    """A short silence, and past the turn-merge window so the next turn is a new one."""
    import asyncio
    import time

    wait = 0.5
    if speech_end is not None:
        wait = max(wait, speech_end + merge_window_s + 0.5 - time.monotonic())
    await asyncio.sleep(wait)


async def _session(
    url: str, clips: list[_Clip], delay: float, timeout: float, merge_window_s: float
) -> dict[str, Any]:
    import asyncio

    import websockets

    await asyncio.sleep(delay)
    try:
        conn = await _Conn.open(url)
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
        return {"turns": [], "error": f"cannot connect: {exc!r}", "mic_max_lag_ms": 0.0}
    turns: list[dict[str, Any]] = []
    error = None
    try:
        await asyncio.sleep(0.5)  # the microphone is on before anyone speaks
        for clip in clips:
            turn = await _voice_turn(conn, clip, timeout)
            turns.append(turn)
            await _pause_after(turn.pop("speech_end"), merge_window_s)
    except (ConnectionError, OSError, websockets.exceptions.WebSocketException) as exc:
        error = f"{type(exc).__name__}: {exc}"
        _log(f"  a session ended early: {error}")
    finally:
        await conn.close()
    return {"turns": turns, "error": error, "mic_max_lag_ms": round(conn.mic_max_lag_ms, 1)}


async def _barge_in_trial(
    conn: _Conn, interruption: _Clip, timeout: float, merge_window_s: float
) -> dict[str, Any]:
    """A typed request for a long answer; once its audio streams, the user talks over it."""
    start = len(conn.log)
    trial: dict[str, Any] = {"measured": False}
    await conn.send(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": LONG_ANSWER_PROMPT}],
            },
        }
    )
    await conn.send(
        {
            "type": "response.create",
            "response": {"instructions": LONG_ANSWER_INSTRUCTIONS, "max_output_tokens": 400},
        }
    )
    try:
        i_created, _, created = await conn.wait_for(
            lambda t, e: e["type"] == "response.created", start, timeout
        )
        rid = created["response"]["id"]
        await conn.wait_for(
            lambda t, e: e["type"] in AUDIO_DELTAS and e.get("response_id") == rid,
            i_created,
            timeout,
        )
    except TimeoutError:
        trial["reason"] = f"no audio of the long answer within {timeout:.0f} s"
        return trial
    first_sent, last_sent = await conn.say(interruption.pcm)
    try:
        i_done, t_done, done = await conn.wait_for(
            lambda t, e: e["type"] == "response.done" and e["response"]["id"] == rid,
            i_created,
            timeout,
        )
    except TimeoutError:
        trial["reason"] = "the long answer never finished (no response.done)"
        return trial
    events = conn.events(i_created, i_done)
    deltas = [t for t, e in events if e["type"] in AUDIO_DELTAS and e.get("response_id") == rid]
    # The server announces speech_started once the speech has passed its barge-in hold,
    # right after it cancelled the answer (so after that answer's response.done).
    try:
        _, started, _ = await conn.wait_for(
            lambda t, e: e["type"] == "input_audio_buffer.speech_started" and t >= first_sent,
            i_created,
            5.0,
        )
    except TimeoutError:
        started = None
    status = done["response"]["status"]
    trial.update(
        {
            "status": status,
            "status_details": done["response"].get("status_details"),
            "audio_deltas_before_interruption": sum(1 for t in deltas if t < first_sent),
            "audio_deltas_after_interruption": sum(1 for t in deltas if t >= first_sent),
            # A client flushes playback on speech_started: audio after it is played by nobody.
            "audio_deltas_after_speech_started": None
            if started is None
            else sum(1 for t in deltas if t > started),
            "to_speech_started_ms": _ms(started, first_sent),
            "to_last_audio_delta_ms": _ms(deltas[-1], first_sent) if deltas else None,
            "to_response_done_ms": _ms(t_done, first_sent),
        }
    )
    if status != "cancelled":
        trial["reason"] = "the answer finished before the interruption took effect"
    elif deltas and deltas[-1] < first_sent:
        trial["reason"] = "all the answer's audio had arrived before the interruption started"
        trial["measured"] = True  # the cancel itself (response.done) is still measured
    else:
        trial["measured"] = True
    # The interruption is a turn of its own; its answer is not measured: cancel it, so
    # the next trial starts on a quiet session.
    try:
        i2, _, c2 = await conn.wait_for(
            lambda t, e: e["type"] == "response.created" and t > last_sent, i_done, timeout
        )
        rid2 = c2["response"]["id"]

        def is_done(t: float, e: dict[str, Any]) -> bool:
            return e["type"] == "response.done" and e["response"]["id"] == rid2

        if not any(is_done(t, e) for t, e in conn.events(i2)):
            await conn.send({"type": "response.cancel"})
        await conn.wait_for(is_done, i2, timeout)
    except TimeoutError:
        trial["note"] = "the interruption got no answer to cancel"
    await _pause_after(last_sent, merge_window_s)
    return trial


async def _run_clients(
    server: _Server, plan: _Plan, clips: dict[str, _Clip], metadata: dict[str, Any]
) -> dict[str, Any]:
    import random

    url = f"ws://127.0.0.1:{server.port}/v1/realtime"
    merge_window_s = metadata["turn_merge_window_ms"] / 1000
    human = [clips[n] for n in plan.human_clips]
    questions = [clips[f"q{i + 1}"] for i in range(len(QUESTIONS))]
    # One session starts with the human clips; concurrent sessions start with questions
    # (shorter), and the human clips come later in the rotation.
    single, concurrent = [*human, *questions], [*questions, *human]
    rng = random.Random(plan.seed)
    levels: dict[str, Any] = {}
    all_turns: list[dict[str, Any]] = []
    for n_sessions in plan.levels:
        n_turns = plan.turns if n_sessions == 1 else plan.turns_concurrent
        # Session k says inputs k, k+1, ...: every session starts differently.
        inputs = single if n_sessions == 1 else concurrent
        scripts = [
            [inputs[(k + j) % len(inputs)] for j in range(n_turns)] for k in range(n_sessions)
        ]
        delays, t = [], 0.0
        for _ in range(n_sessions):
            delays.append(round(t, 3))
            t += rng.expovariate(plan.arrival_rate)
        _log(f"{n_sessions} session(s) x {n_turns} turns, starts at {delays} s")
        sessions = await _gather(
            _session(url, script, delay, plan.turn_timeout, merge_window_s)
            for script, delay in zip(scripts, delays, strict=True)
        )
        turns = [turn for s in sessions for turn in s["turns"]]
        all_turns += turns
        levels[f"sessions_{n_sessions}"] = _level_summary(n_sessions, n_turns, delays, sessions)
        v2v = levels[f"sessions_{n_sessions}"]["voice_to_voice_ms"]
        _log(f"  voice-to-voice P50 {v2v['p50']} ms, P95 {v2v['p95']} ms (n={v2v['n']})")
    out: dict[str, Any] = {"concurrency": levels, "wer": _wer_summary(all_turns, clips)}
    if plan.barge_in > 0:
        _log(f"barge-in: {plan.barge_in} trial(s)")
        conn = await _Conn.open(url)
        trials = []
        try:
            for _ in range(plan.barge_in):
                trials.append(
                    await _barge_in_trial(
                        conn, clips["interruption"], plan.turn_timeout, merge_window_s
                    )
                )
        finally:
            await conn.close()
        measured = [t for t in trials if t["measured"]]
        out["barge_in"] = {
            "trials": len(trials),
            "measured": len(measured),
            "interruption": clips["interruption"].text,
            "to_last_audio_delta_ms": summarize(t["to_last_audio_delta_ms"] for t in measured),
            "to_response_done_ms": summarize(t["to_response_done_ms"] for t in measured),
            "to_speech_started_ms": summarize(t["to_speech_started_ms"] for t in measured),
            "audio_deltas_after_speech_started": sum(
                t.get("audio_deltas_after_speech_started") or 0 for t in measured
            ),
            "target_ms": TARGETS_MS["barge_in"],
            "details": trials,
        }
    return out


async def _gather(coros: Iterable[Any]) -> list[Any]:
    import asyncio

    return list(await asyncio.gather(*coros))


def _level_summary(
    n_sessions: int, n_turns: int, delays: list[float], sessions: list[dict[str, Any]]
) -> dict[str, Any]:
    turns = [turn for s in sessions for turn in s["turns"]]
    ok = [t for t in turns if t["status"] == "completed" and t["voice_to_voice_ms"] is not None]
    v2v = summarize(t["voice_to_voice_ms"] for t in ok)
    stages = (
        "speech_stopped_to_transcript_ms",
        "speech_stopped_to_first_token_ms",
        "speech_stopped_to_first_audio_ms",
    )
    return {
        "sessions": n_sessions,
        "turns_per_session": n_turns,
        "session_start_offsets_s": delays,
        "turns": len(turns),
        "turns_ok": len(ok),
        "voice_to_voice_ms": v2v,
        "voice_to_voice_target_ms": {
            "p50": TARGETS_MS["voice_to_voice_p50"],
            "p95": TARGETS_MS["voice_to_voice_p95"],
            "p50_met": v2v["p50"] is not None and v2v["p50"] <= TARGETS_MS["voice_to_voice_p50"],
            "p95_met": v2v["p95"] is not None and v2v["p95"] <= TARGETS_MS["voice_to_voice_p95"],
        },
        "server_breakdown_ms": {
            stage: summarize((t.get("server") or {}).get(stage) for t in ok) for stage in stages
        },
        "client_speech_end_to_speech_stopped_event_ms": summarize(
            t["speech_end_to_speech_stopped_event_ms"] for t in ok
        ),
        "mic_max_lag_ms": max(s["mic_max_lag_ms"] for s in sessions),
        "session_errors": [s["error"] for s in sessions if s["error"]],
        "details": turns,
    }


def _wer_summary(turns: list[dict[str, Any]], clips: dict[str, _Clip]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("human", "tts"):
        rows = []
        errors = words = 0
        for turn in turns:
            if turn["kind"] != kind or turn["transcript"] is None:
                continue
            ref = clips[turn["clip"]].text
            e, n = word_errors(ref, turn["transcript"])
            errors, words = errors + e, words + n
            rows.append(
                {"clip": turn["clip"], "transcript": turn["transcript"], "wer": round(e / n, 4)}
            )
        out[kind] = {
            "wer": round(errors / words, 4) if words else None,
            "n_utterances": len(rows),
            "n_reference_words": words,
            "references": {
                c.name: c.text
                for c in clips.values()
                if c.kind == kind and c.name in {r["clip"] for r in rows}
            },
            "details": rows,
        }
    return out


# --- metadata and summary ------------------------------------------------------------------


def _metadata(
    args: argparse.Namespace, server: _Server, plan: _Plan, clips: dict[str, _Clip]
) -> dict[str, Any]:
    import asyncio
    import datetime
    import os
    import platform
    import subprocess
    import sys

    from app.settings import Settings

    overrides = {
        k: v
        for k, v in {"llm_backend": args.llm_backend, "llm_model": args.llm_model}.items()
        if v is not None
    }
    settings = Settings.from_env(**overrides)
    served = {
        role: {"name": name, "ready": server.get(f"/v2/models/{name}/ready")[0] == 200}
        for role, name in (
            ("llm", settings.llm_model),
            ("asr", settings.asr_model),
            ("tts", settings.tts_voice),
        )
    }

    async def session_defaults() -> dict[str, Any]:
        conn = await _Conn.open(f"ws://127.0.0.1:{server.port}/v1/realtime")
        try:
            return dict(conn.session)
        finally:
            await conn.close()

    session = asyncio.run(session_defaults())

    def git(*cmd: str) -> str | None:
        try:
            return subprocess.run(
                ["git", *cmd], cwd=os.path.dirname(__file__), capture_output=True, text=True
            ).stdout.strip()
        except OSError:
            return None

    return {
        "llm_backend": settings.llm_backend,
        "models": served,
        "max_response_tokens": settings.max_response_tokens,
        "temperature": settings.temperature,
        "turn_detection": session.get("turn_detection"),
        "silence_window_ms": (session.get("turn_detection") or {}).get("silence_duration_ms"),
        "turn_merge_window_ms": settings.turn_merge_window_ms,
        "barge_in_hold_ms": getattr(settings, "barge_in_hold_ms", None),
        "audio_lead_ms": getattr(settings, "audio_lead_ms", None),
        "input_audio_format": session.get("input_audio_format"),
        "output_audio_format": session.get("output_audio_format"),
        "client_audio": {"rate_hz": WIRE_RATE, "chunk_ms": CHUNK_MS, "pace": "real time"},
        "inputs": {
            name: {"kind": c.kind, "seconds": round(c.duration_s, 2), "text": c.text}
            for name, c in clips.items()
        },
        "speech_trim": "leading/trailing 10 ms frames under -20 dB of the loudest, 30 ms kept",
        "session_arrivals": {"process": "poisson", "rate_per_s": plan.arrival_rate},
        "seed": plan.seed,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "command": " ".join(sys.argv),
        "server_command": " ".join(server.command),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "notes": [
            "voice_to_voice_ms is measured on the client from the send of the last speech "
            "chunk to the first audio delta; it includes the silence window the server VAD "
            "needs to detect the end of the turn (silence_window_ms).",
            "server_breakdown_ms comes from the server's r1voice.turn.metrics, measured from "
            "the moment its VAD reported speech_stopped.",
            "barge-in times run from the send of the interruption's first chunk and include "
            "the server's minimum speech duration before it interrupts.",
            "the server sends answer audio at real-time pace (audio_lead_ms ahead of "
            "playback), so a turn's response.done comes about the answer's duration after its "
            "first audio.",
        ],
    }


def _log(message: str) -> None:
    import sys

    print(f"[bench voice] {message}", file=sys.stderr, flush=True)


def _print_summary(result: dict[str, Any]) -> None:
    """A short human summary on stderr (stdout is the JSON), targets next to results."""

    def fmt(s: dict[str, Any] | None) -> str:
        if not s or not s.get("n"):
            return "n=0"
        return f"P50 {s['p50']:>7} P95 {s['p95']:>7} mean {s['mean']:>7} n={s['n']}"

    if "startup_to_ready_s" in result:
        _log(f"startup to ready: {result['startup_to_ready_s']} s")
    t = TARGETS_MS
    for name, level in result.get("concurrency", {}).items():
        _log(
            f"{name}: voice-to-voice ms {fmt(level['voice_to_voice_ms'])}"
            f"   (target P50 <= {t['voice_to_voice_p50']:.0f}, P95 <= {t['voice_to_voice_p95']:.0f})"
        )
        for stage, s in level["server_breakdown_ms"].items():
            _log(f"    {stage:34s} {fmt(s)}")
    for kind, w in result.get("wer", {}).items():
        _log(f"WER {kind}: {w['wer']} over {w['n_reference_words']} words")
    b = result.get("barge_in")
    if b:
        _log(
            f"barge-in ({b['measured']}/{b['trials']} measured): to last audio delta "
            f"{fmt(b['to_last_audio_delta_ms'])}; to response.done "
            f"{fmt(b['to_response_done_ms'])}   (target <= {t['barge_in']:.0f})"
        )
