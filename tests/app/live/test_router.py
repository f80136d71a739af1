"""R1VOICE_LIVE_DELEGATE's router: which user turns the server delegates from their
transcript (a question or a request under "questions", every turn under "always", none
under "model", where the live model's tool decides)."""

from __future__ import annotations

import pytest

from app.live.router import routed
from app.settings import Settings

ASKED = [
    "What is the capital of France?",
    "how many legs does a spider have",
    "Tell me how to boil an egg.",
    "What's nine squared",
    "Please convert ten miles to kilometres.",
    "Is it going to rain",
    "In which country are the pyramids of Giza",
    "So how long does it take",
    "中国的首都是哪里",
    "一个星期有几天",
]
SAID = ["Thanks, that's all.", "I like green tea.", "Okay.", "I know what you mean.", "好的，谢谢"]
SAID += ["", "   "]


@pytest.mark.parametrize("text", ASKED)
def test_questions_and_requests_are_routed(text: str) -> None:
    assert routed("questions", text)
    assert routed("always", text)
    assert not routed("model", text)


@pytest.mark.parametrize("text", SAID)
def test_other_turns_are_left_to_the_live_model(text: str) -> None:
    assert not routed("questions", text)
    assert routed("always", text) == bool(text.strip())  # nothing said: nothing to delegate


def test_an_unknown_route_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="R1VOICE_LIVE_DELEGATE") as refused:
        Settings(live_delegate="sometimes")
    assert "model, questions or always" in str(refused.value)
