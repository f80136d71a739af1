"""RequestStream: one streaming caller's queue, and what it has been sent so far."""

from __future__ import annotations

import asyncio
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
        )
        self.text_sent, self.tokens_sent = len(text), num_tokens
        return delta if delta.text or delta.token_ids or delta.finished else None


def deliver(items: list[tuple[RequestStream, StreamDelta]]) -> None:
    """Runs on the caller's event loop (call_soon_threadsafe): one wake-up per step."""
    for stream, delta in items:
        stream.queue.put_nowait(delta)
