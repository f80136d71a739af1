"""The verdict of the turn model and the words together at a pause, per eagerness."""

from __future__ import annotations

import pytest

from app.realtime.turns.patience import PATIENCE
from app.realtime.turns.turn_words import Verdict, verdict


@pytest.mark.parametrize(
    ("probability", "text", "expected"),
    [
        (0.9, "What time is it?", Verdict.END),
        (0.1, "What time is it?", Verdict.END),  # the model's score of questions swings
        (0.9, "I would like to book a table for two.", Verdict.END),
        (0.1, "I would like to book a table for two.", Verdict.DOUBT),  # reads finished only
        (0.6, "and so my fellow americans", Verdict.DOUBT),  # sounds finished only
        (0.95, "and so my fellow americans", Verdict.DOUBT),  # ... and a lead-in
        # no sentence end, but the model is sure: Whisper's early pass often leaves the
        # full stop off a finished sentence (this one waited the doubt wait, 1.5 s)
        (0.97, "Name a fruit that is yellow", Verdict.END),
        # plainly a request, but not surely finished: the short doubt (plain_wait_ms), in
        # which "... tomorrow at five" still continues the turn
        (0.6, "Name a fruit that is yellow", Verdict.PLAIN),
        (0.92, "Please remind me to call my sister", Verdict.PLAIN),
        (0.1, "Tell me a joke about a cat.", Verdict.PLAIN),  # reads finished, a request
        (0.1, "Tell me.", Verdict.DOUBT),  # too short: as often an opening
        (0.6, "I want to know the time in Tokyo", Verdict.PLAIN),
        (0.6, "Tell me about the history of", Verdict.GO_ON),  # trails off all the same
        (0.6, "Have a look at the garden", Verdict.DOUBT),  # "have" opens plans as often
        (0.1, "Name a fruit that is yellow", Verdict.GO_ON),
        (0.95, "What is the capital of France", Verdict.END),
        (0.95, "", Verdict.DOUBT),  # no words to read
        # a question worded as one, its "?" left off: the model decides end or doubt
        (0.77, "How many days are there in a week", Verdict.END),  # was a 1.5 s doubt
        (0.1, "How many days are there in a week", Verdict.PLAIN),  # 1.5 s doubt, then 0.6
        (0.6, "It rained. Where do you usually go", Verdict.END),
        (0.6, "Do you know", Verdict.DOUBT),  # too short: as often a question's opening
        (0.6, "When I get home", Verdict.DOUBT),  # a subordinate clause, not a question
        (0.6, "What I would like to do", Verdict.DOUBT),
        (0.6, "Do your homework after dinner", Verdict.DOUBT),  # an imperative
        (0.6, "Can you tell me how to get to the", Verdict.GO_ON),  # still trails off
        (0.9, "And so my fellow Americans.", Verdict.DOUBT),  # a lead-in, not a sentence
        (0.1, "And so my fellow Americans.", Verdict.GO_ON),
        (0.9, "It rained. So we stayed at home all day.", Verdict.END),  # not short
        (0.9, "So what?", Verdict.END),
        (0.1, "and so my fellow americans ask not", Verdict.GO_ON),
        (0.9, "Can you tell me how to get to the...", Verdict.GO_ON),
        (0.9, "What I really want to know is", Verdict.GO_ON),
        (0.9, None, Verdict.END),  # no words (a client streaming faster than real time)
        (0.1, None, Verdict.GO_ON),
        (0.9, 'He said "stop."', Verdict.END),
    ],
)
def test_the_model_and_the_words_give_one_verdict(
    probability: float, text: str | None, expected: Verdict
) -> None:
    assert verdict(probability, text) is expected


@pytest.mark.parametrize(
    ("probability", "text", "expected"),
    [
        (0.1, "你今天好吗", Verdict.END),  # a question particle ends a turn as "?" does
        (0.1, "你是谁？", Verdict.END),
        (0.1, "他说：“我们走吧。”", Verdict.END),
        (0.9, "我们先吃饭，然后", Verdict.GO_ON),
        (0.9, "我想买一个", Verdict.GO_ON),
        (0.9, "我想去北京看看。", Verdict.END),
        (0.1, "我想去北京看看。", Verdict.DOUBT),  # reads finished only
        (0.1, "请给我讲个笑话", Verdict.PLAIN),  # a request: the short doubt
        (0.1, "北京的人口是多少", Verdict.PLAIN),  # ends with a question word
        (0.1, "你能告诉我", Verdict.DOUBT),  # "can you tell me": an opening
        (0.1, "请讲", Verdict.DOUBT),  # too short
        # Whisper writes Mandarin unpunctuated: no mark reads as finished there ...
        (0.9, "我想去北京看看", Verdict.END),
        (0.1, "我想去北京看看", Verdict.DOUBT),
        (0.9, "富士康在印度工厂出现大规模感染目前工厂产量已下降超50%", Verdict.END),
        (0.9, "吃醋,有启动的味道", Verdict.END),
        # ... but not in English, after a Latin word, nor for a Mandarin lead-in
        (0.6, "我明天要去 Paris", Verdict.DOUBT),
        (0.95, "我明天要去 Paris", Verdict.END),  # sure, and no lead-in
        (0.1, "我明天要去 Paris", Verdict.GO_ON),
        (0.95, "所以我们", Verdict.DOUBT),  # a lead-in, however sure
        (0.1, "所以我们", Verdict.GO_ON),
        # a lead-in: a short sentence opening with a connective, up to 8 characters (five
        # words of about 1.6 characters), as "And so my fellow Americans." is five words
        (0.9, "所以我的同胞们。", Verdict.DOUBT),
        (0.1, "所以我的同胞们。", Verdict.GO_ON),
        (0.9, "所以我们待在家里。", Verdict.DOUBT),  # 8 characters
        (0.9, "所以我们都待在家里。", Verdict.END),  # 9: a sentence
        (0.9, "下雨了。所以我们今天一整天都待在家里。", Verdict.END),
        (0.9, "和平。", Verdict.END),  # a single 和 opens no lead-in
        (0.9, "What does 你好 mean?", Verdict.END),  # mixed English and Chinese
        (0.1, "我们明天去 Paris 吧", Verdict.END),
        (0.9, "我明天要去 Paris.", Verdict.END),
        (0.9, "So 我们回家了.", Verdict.DOUBT),  # "so" and 5 characters: a lead-in
        (0.9, "我们去了公园 and", Verdict.GO_ON),
    ],
)
def test_mandarin_words_and_the_model_give_one_verdict(
    probability: float, text: str, expected: Verdict
) -> None:
    assert verdict(probability, text) is expected


def test_low_eagerness_needs_a_surer_model_to_end_at_once() -> None:
    """`low` lets people take their time: a finished sentence the model scores 0.85
    (espeak-ng's "I would like to book a table for two." cut mid-utterance) is a doubt
    there, and ends at once at auto; words with no sentence end never end at once."""
    text = "I would like to book a table for two."
    assert verdict(0.85, text, PATIENCE["low"]) is Verdict.DOUBT
    assert verdict(0.85, text, PATIENCE["auto"]) is Verdict.END
    assert verdict(0.95, text, PATIENCE["low"]) is Verdict.END
    assert verdict(0.99, "Name a fruit that is yellow", PATIENCE["low"]) is Verdict.DOUBT
    assert verdict(0.85, "Name a fruit that is yellow", PATIENCE["high"]) is Verdict.END
    assert verdict(0.85, "Name a fruit that is yellow", PATIENCE["auto"]) is Verdict.PLAIN
    assert verdict(0.1, "Tell me a joke about a cat.", PATIENCE["low"]) is Verdict.DOUBT
    waits = [PATIENCE[e].doubt_wait_ms for e in ("high", "medium", "low")]
    assert waits == sorted(waits) and PATIENCE["auto"] == PATIENCE["medium"]
    for eagerness in ("high", "medium"):
        plain = PATIENCE[eagerness].plain_wait_ms
        assert plain is not None and plain < PATIENCE[eagerness].doubt_wait_ms
