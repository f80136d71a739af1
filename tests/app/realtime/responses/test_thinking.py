"""Thinking: R1's thinking split off an answer's deltas, its end reported once."""

from __future__ import annotations

from typing import Any

import pytest

from app.llm import LLMDelta
from app.realtime.responses.thinking import Thinking


def run(deltas: list[LLMDelta], opens: bool) -> tuple[str, list[tuple[str, Any]]]:
    sent: list[tuple[str, Any]] = []
    thinking = Thinking(opens, lambda kind, **fields: sent.append((kind, fields)))
    answer = [text for delta in deltas for text in thinking.push(delta)] + thinking.flush()
    return "".join(answer), sent


@pytest.mark.parametrize(
    ("deltas", "opens", "answer", "sent"),
    [
        (  # cut at the budget: the engine's close arrives on deltas marked cut
            [
                LLMDelta("ab"),
                LLMDelta("\n</th", reasoning_cut=True),
                LLMDelta("ink>\n\nHi.", reasoning_cut=True),
            ],
            True,
            "Hi.",
            [
                ("r1voice.reasoning.delta", {"delta": "ab"}),
                ("r1voice.reasoning.delta", {"delta": "\n"}),
                ("r1voice.reasoning.done", {"cut": True}),
            ],
        ),
        (  # the model opens and closes thinking itself
            [LLMDelta("<think>x</think>"), LLMDelta("\n\nHi.")],
            False,
            "Hi.",
            [
                ("r1voice.reasoning.delta", {"delta": "x"}),
                ("r1voice.reasoning.done", {"cut": False}),
            ],
        ),
        (  # max_tokens ends the answer inside its thinking: it ended all the same
            [LLMDelta("still thinking")],
            True,
            "",
            [
                ("r1voice.reasoning.delta", {"delta": "still thinking"}),
                ("r1voice.reasoning.done", {"cut": False}),
            ],
        ),
        ([LLMDelta("Hi "), LLMDelta("there.")], False, "Hi there.", []),  # no thinking
    ],
)
def test_thinking_is_shown_and_its_end_reported_once(
    deltas: list[LLMDelta], opens: bool, answer: str, sent: list[tuple[str, Any]]
) -> None:
    assert run(deltas, opens) == (answer, sent)
