"""What the engine hands back: finished outputs, stream deltas (and EngineStats)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.request_times import RequestTimes
from engine.sequence import Sequence
from engine.stats.engine_stats import EngineStats

__all__ = ["EngineStats", "RequestOutput", "RequestTimes", "StreamDelta"]


@dataclass
class RequestOutput:
    """A request's result: the generated tokens only, and their text."""

    request_id: str
    prompt_token_ids: list[int]
    token_ids: list[int]
    text: str
    finished: bool
    finish_reason: str | None = None  # "stop", "length", "abort" or "error"
    num_cached_tokens: int = 0  # prompt tokens served from the prefix cache
    reasoning_cut: bool = False  # thinking was ended by the engine at its budget
    times: RequestTimes | None = None  # its phases (None: no token was made)

    @classmethod
    def of(cls, seq: Sequence) -> RequestOutput:
        """The output of a sequence (finished or not) as it stands."""
        return cls(
            request_id=seq.request_id,
            prompt_token_ids=seq.prompt_token_ids,
            token_ids=seq.completion_token_ids,
            text=seq.output_text,
            finished=seq.is_finished,
            finish_reason=seq.finish_reason,
            num_cached_tokens=seq.num_cached_tokens,
            reasoning_cut=seq.reasoning_cut,
            times=seq.times(),
        )


@dataclass
class StreamDelta:
    """One piece of a stream: the text and tokens produced since the previous delta.

    ``text`` is always whole characters. The last delta has ``finished`` set and the
    reason; an aborted request ends with finish_reason "abort".
    """

    request_id: str
    text: str
    token_ids: list[int] = field(default_factory=list)
    finished: bool = False
    finish_reason: str | None = None
    num_prompt_tokens: int = 0
    num_cached_tokens: int = 0
    reasoning_cut: bool = False  # thinking was ended by the engine at its budget
    times: RequestTimes | None = None  # the last delta: its phases (None: no token made)

    def __str__(self) -> str:
        return self.text
