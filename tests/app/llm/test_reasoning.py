"""R1 reasoning split from the spoken answer, however the stream is cut."""

from __future__ import annotations

import pytest

from app.llm.reasoning import ThinkSplitter


def _run(text: str, step: int, starts_in_reasoning: bool = False) -> tuple[str, str]:
    splitter = ThinkSplitter(starts_in_reasoning)
    parts = []
    for i in range(0, len(text), step):
        parts += splitter.push(text[i : i + step])
    parts += splitter.flush()
    reasoning = "".join(t for k, t in parts if k == "reasoning")
    content = "".join(t for k, t in parts if k == "content")
    return reasoning, content


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 100])
def test_think_block_is_reasoning_rest_is_content(step: int) -> None:
    assert _run("<think>x < y, so</think>\n\nThe answer is 4.", step) == (
        "x < y, so",
        "The answer is 4.",
    )


@pytest.mark.parametrize("step", [1, 4, 100])
def test_template_opened_block(step: int) -> None:
    assert _run("\nLet me think.\n</think>\n\nParis.", step, starts_in_reasoning=True) == (
        "\nLet me think.\n",
        "Paris.",
    )


def test_no_think_block_is_all_content() -> None:
    assert _run("Just an answer with a < sign and <b>tags</b>.", 3) == (
        "",
        "Just an answer with a < sign and <b>tags</b>.",
    )


def test_unclosed_block_stays_reasoning() -> None:
    assert _run("<think>still thinking", 4) == ("still thinking", "")
