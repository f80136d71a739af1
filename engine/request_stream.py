"""RequestStream: one streaming caller's queue, and what it has been sent so far; how the
engine thread hands deltas to the callers' event loops."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from engine.outputs import StreamDelta
from engine.sequence import Sequence


@dataclass
class RequestStream:
    """The event loop and queue of one ``AsyncLLM.stream`` call (engine thread side)."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[StreamDelta]
    text_sent: int = 0
    tokens_sent: int = 0

    def delta(self, seq: Sequence, text: str) -> StreamDelta | None:
        """What is new since the last delta (``text``: the sequence's streamable text);
        None when nothing is."""
        num_tokens = seq.num_completion_tokens
        delta = StreamDelta(
            request_id=seq.request_id,
            text=text[self.text_sent :],
            token_ids=seq.token_ids[seq.num_tokens - num_tokens + self.tokens_sent :],
            finished=seq.is_finished,
            finish_reason=seq.finish_reason,
            num_prompt_tokens=seq.num_prompt_tokens,
            num_cached_tokens=seq.num_cached_tokens,
            reasoning_cut=seq.reasoning_cut,
            times=seq.times() if seq.is_finished else None,
        )
        self.text_sent, self.tokens_sent = len(text), num_tokens
        return delta if delta.text or delta.token_ids or delta.finished else None


def deliver(items: list[tuple[RequestStream, StreamDelta]]) -> None:
    """Runs on the caller's event loop (call_soon_threadsafe): one wake-up per step."""
    for stream, delta in items:
        stream.queue.put_nowait(delta)


def publish(
    streams: dict[str, RequestStream],
    seqs: list[Sequence],
    text_of: Callable[[Sequence], str],
    abort: Callable[[str], object],
) -> bool:
    """Send each sequence's news to its stream: one wake-up per event loop per step
    (engine thread). A caller whose event loop is gone is aborted: nobody listens.
    True when that happened (the engine's state changed after the news was taken)."""
    aborted = False
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[RequestStream, StreamDelta]]] = {}
    for seq in seqs:
        stream = streams.get(seq.request_id)
        if stream is None:
            continue
        if seq.is_finished:
            del streams[seq.request_id]
        delta = stream.delta(seq, text_of(seq))
        if delta is not None:
            by_loop.setdefault(stream.loop, []).append((stream, delta))
    for loop, items in by_loop.items():
        try:
            loop.call_soon_threadsafe(deliver, items)
        except RuntimeError:
            for _, delta in items:
                abort(delta.request_id)
                streams.pop(delta.request_id, None)
                aborted = True
    return aborted


def fail_all(streams: dict[str, RequestStream]) -> None:
    """The engine loop died: end every open stream with an error (nothing may hang)."""
    for request_id, stream in list(streams.items()):
        delta = StreamDelta(request_id, "", finished=True, finish_reason="error")
        with contextlib.suppress(RuntimeError):  # that caller's event loop is gone
            stream.loop.call_soon_threadsafe(deliver, [(stream, delta)])
    streams.clear()
