"""Thinking: R1's thinking split off an answer's deltas, its end reported once."""

from __future__ import annotations

import pytest

from app.llm import LLMDelta
from app.protocol.server_events import ReasoningDelta, ReasoningDone, ServerEvent
from app.realtime.responses.thinking import Thinking

IDS = {"response_id": "resp_1", "item_id": "item_1"}


def thought(text: str) -> ReasoningDelta:
    return ReasoningDelta(**IDS, delta=text)


def done(cut: bool) -> ReasoningDone:
    return ReasoningDone(**IDS, cut=cut)


def run(deltas: list[LLMDelta], opens: bool) -> tuple[str, list[ServerEvent]]:
    sent: list[ServerEvent] = []
    thinking = Thinking(opens, IDS["response_id"], IDS["item_id"], sent.append)
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
                thought("ab"),
                thought("\n"),
                done(True),
            ],
        ),
        (  # the model opens and closes thinking itself
            [LLMDelta("<think>x</think>"), LLMDelta("\n\nHi.")],
            False,
            "Hi.",
            [
                thought("x"),
                done(False),
            ],
        ),
        (  # max_tokens ends the answer inside its thinking: it ended all the same
            [LLMDelta("still thinking")],
            True,
            "",
            [
                thought("still thinking"),
                done(False),
            ],
        ),
        ([LLMDelta("Hi "), LLMDelta("there.")], False, "Hi there.", []),  # no thinking
    ],
)
def test_thinking_is_shown_and_its_end_reported_once(
    deltas: list[LLMDelta], opens: bool, answer: str, sent: list[ServerEvent]
) -> None:
    assert run(deltas, opens) == (answer, sent)
