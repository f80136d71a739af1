"""An answer's R1 thinking, split off as it streams: shown, never spoken, and reported
once when it ends (`r1voice.reasoning.done`, with `cut`: whether the engine closed it at
the session's budget, so a client can say the model was stopped, not finished)."""

from __future__ import annotations

from app.llm import LLMDelta
from app.llm.reasoning import ThinkSplitter
from app.protocol.server_events import ReasoningDelta, ReasoningDone
from app.realtime.handoff import EventSink


class Thinking:
    """push(delta) -> the answer's text pieces; the thinking goes to `emit` as events."""

    def __init__(
        self, starts_in_reasoning: bool, response_id: str, item_id: str, emit: EventSink
    ) -> None:
        self._splitter = ThinkSplitter(starts_in_reasoning)
        self._ids = {"response_id": response_id, "item_id": item_id}
        self._emit = emit
        self._thought = starts_in_reasoning
        self._reported = False
        self._cut = False

    def push(self, delta: LLMDelta) -> list[str]:
        self._cut = self._cut or delta.reasoning_cut  # set before the forced `</think>` arrives
        return self._answer(self._splitter.push(delta.text))

    def flush(self) -> list[str]:
        answer = self._answer(self._splitter.flush())
        self._done()  # the stream ended inside its thinking (max_tokens): it ended too
        return answer

    def _answer(self, pieces: list[tuple[str, str]]) -> list[str]:
        answer = []
        for kind, text in pieces:
            if kind == "reasoning":
                self._thought = True
                self._emit(ReasoningDelta(**self._ids, delta=text))
            else:
                self._done()
                answer.append(text)
        if not self._splitter.in_reasoning:
            self._done()
        return answer

    def _done(self) -> None:
        if self._thought and not self._reported:
            self._reported = True
            self._emit(ReasoningDone(**self._ids, cut=self._cut))
