"""What the assistant says while a tool runs, and which turns cancel a call."""

from __future__ import annotations

import pytest

from app.tools.acknowledgements import cancels, checking


def test_the_acknowledgement_is_in_the_users_language() -> None:
    assert checking("en") == "Let me check that."
    assert checking("zh") == "我查一下。"
    assert checking("pt-BR") == "Vou verificar."
    assert checking(None) == checking("xx") == "Let me check that."


@pytest.mark.parametrize(
    ("said", "cancelled"),
    [
        ("Never mind.", True),
        ("Oh, never mind!", True),
        ("Forget it", True),
        ("算了", True),
        ("不用了，谢谢", True),
        ("Never mind the weather, what time is it in Tokyo right now?", False),
        ("What's the weather in Paris?", False),
        ("", False),
    ],
)
def test_a_short_turn_that_says_never_mind_cancels(said: str, cancelled: bool) -> None:
    assert cancels(said) is cancelled
