"""LocalAgreement-2: a unit is confirmed once two successive hypotheses agree on it;
Chinese is agreed on character by character."""

from __future__ import annotations

import pytest

from app.realtime.turns.agreement import LocalAgreement


@pytest.mark.parametrize(
    ("hypotheses", "fresh", "text"),
    [
        (
            ["what colour", "what colour is the", "what colour is the sky"],
            [[], ["what", "colour"], ["is", "the"]],
            "what colour is the",
        ),
        (  # case and punctuation do not make two hypotheses disagree
            ["Hello, world", "hello world. How"],
            [[], ["hello", "world."]],
            "hello world.",
        ),
        (  # the first difference stops the agreement
            ["ask not what your", "ask what your country"],
            [[], ["ask"]],
            "ask",
        ),
        (
            ["我想去", "我想去北京", "我想去北京看看"],
            [[], ["我", "想", "去"], ["北", "京"]],
            "我想去北京",
        ),
        (  # Chinese punctuation is ignored as ASCII punctuation is
            ["你好，我想", "你好我想去。", "你好,我想去北京"],
            [[], ["你", "好", "我", "想"], ["去"]],
            "你好我想去",
        ),
        (  # a character Whisper changed is not confirmed, nor anything after it
            ["我想去北京", "我想起北京"],
            [[], ["我", "想"]],
            "我想",
        ),
        (  # mixed English and Chinese
            ["我想去 Paris", "我想去Paris看看", "我想去 Paris 看看 and"],
            [[], ["我", "想", "去", "Paris"], ["看", "看"]],
            "我想去 Paris 看看",
        ),
    ],
)
def test_agreement(hypotheses: list[str], fresh: list[list[str]], text: str) -> None:
    agreement = LocalAgreement()
    assert [agreement.update(h) for h in hypotheses] == fresh
    assert agreement.text == text
