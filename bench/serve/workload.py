"""The request mix every serve driver sends, the same for a seed: short questions, long
documents to summarize, and multi-turn chats whose requests share their conversation's
earlier turns (a prefix a server may reuse), at Poisson arrival times.

Pure Python and no r1voice import: the locustfile loads it by hand against any server.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

KINDS = ("short", "long", "chat")
SHARES = {"short": 0.6, "long": 0.2, "chat": 0.2}
# max_tokens of each kind: (quick, full); every server is asked to ignore EOS so the
# lengths, and so the work, are the same for all of them
MAX_TOKENS = {"short": (16, 32), "long": (24, 64), "chat": (16, 48)}
DOC_WORDS = {"quick": (250, 320), "full": (1100, 1400)}  # about 1.3 tokens a word
CONVERSATIONS = 4  # chats in flight; each request continues one of them

_WORD_TEXT = (
    "river mountain engine signal garden window market letter winter morning voice battery "
    "carbon planet ocean bridge station kitchen science history music forest machine "
    "language memory network silver harbor village theory summer circuit picture museum "
    "island copper rhythm valley doctor lantern weather journey"
)
WORDS = tuple(_WORD_TEXT.split())
TOPICS = (
    "the weather",
    "a good book",
    "how bridges stand",
    "why the sky is blue",
    "tea or coffee",
    "learning a language",
    "a quiet weekend",
    "the tides",
)
SYSTEM = "You are a helpful assistant. Answer briefly."


@dataclass(frozen=True)
class Request:
    """One request: its class, its chat, the tokens asked for and when it is sent (s)."""

    index: int
    kind: str
    messages: list[dict[str, str]]
    max_tokens: int
    t: float

    def body(self, model: str, stream: bool = True) -> dict[str, Any]:
        """The OpenAI chat-completions body: greedy, a fixed length (`ignore_eos` is
        vLLM's and ours; a server without it may stop early, and the records count the
        tokens it sent)."""
        out: dict[str, Any] = {
            "model": model,
            "messages": self.messages,
            "max_tokens": self.max_tokens,
            "temperature": 0.0,
            "stream": stream,
            "ignore_eos": True,
        }
        if stream:
            out["stream_options"] = {"include_usage": True}
        return out


@dataclass
class _Chat:
    messages: list[dict[str, str]] = field(default_factory=list)


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _document(rng: random.Random, words: int) -> str:
    out, left = [], words
    while left > 0:
        n = min(left, rng.randint(8, 16))
        out.append(_sentence(rng, n))
        left -= n
    return " ".join(out)


def make(n: int, rate: float, seed: int = 0, quick: bool = True) -> list[Request]:
    """`n` requests at Poisson arrivals of `rate` per second, the same for a seed."""
    if n < 1 or rate <= 0:
        raise ValueError(f"need n >= 1 and rate > 0, got n={n}, rate={rate}")
    rng = random.Random(seed)
    size = "quick" if quick else "full"
    chats = [_Chat([{"role": "system", "content": SYSTEM}]) for _ in range(CONVERSATIONS)]
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate) if i else 0.0
        draw, kind = rng.random(), "chat"
        if draw < SHARES["short"]:
            kind = "short"
        elif draw < SHARES["short"] + SHARES["long"]:
            kind = "long"
        if kind == "short":
            question = f"In one sentence, what do you think about {rng.choice(TOPICS)}?"
            messages = [{"role": "user", "content": question}]
        elif kind == "long":
            doc = _document(rng, rng.randint(*DOC_WORDS[size]))
            messages = [{"role": "user", "content": f"{doc}\n\nSummarize the text above."}]
        else:
            chat = chats[rng.randrange(CONVERSATIONS)]
            if len(chat.messages) > 9:  # a long conversation starts over
                chat.messages = chat.messages[:1]
            chat.messages.append({"role": "user", "content": _sentence(rng, 12)[:-1] + "?"})
            messages = list(chat.messages)
            # the reply the next turn carries, fixed so every server is sent the same chat
            chat.messages.append({"role": "assistant", "content": _sentence(rng, 20)})
        tokens = MAX_TOKENS[kind][0 if quick else 1]
        out.append(Request(i, kind, messages, tokens, round(t, 4)))
    return out
