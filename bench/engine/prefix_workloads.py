"""The four workloads of `bench prefix` (fixed seed): their prompts, built from topic words
to a token length, and one workload's run under one engine setting (Poisson arrivals,
TTFTs and tokens)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

_TOPIC_WORDS = {
    "volcanoes": "magma lava eruption crater ash basalt caldera tectonic vent plume",
    "banking": "loan interest deposit mortgage credit ledger audit branch teller fee",
    "football": "striker goal keeper penalty league coach referee pitch tackle match",
    "cooking": "oven flour butter simmer garlic recipe knife sauce roast pastry",
    "astronomy": "galaxy orbit telescope comet nebula planet star quasar moon eclipse",
    "medicine": "patient dose symptom clinic vaccine nurse therapy fever surgeon pulse",
}
TOPICS = {k: v.split() for k, v in _TOPIC_WORDS.items()}
_VERBS = "affects describes changes supports follows shapes explains limits reaches"
VERBS = _VERBS.split()
QUESTIONS = [
    "Summarize the document above in two sentences.",
    "What is the main topic of the document?",
    "List three key terms from the document.",
    "Who would find this document useful, and why?",
    "Give the document a short title.",
]
CHAT_QUESTIONS = [
    "How do I reset my password?",
    "Can you explain the refund policy?",
    "What are your opening hours?",
    "Is there a student discount?",
    "How long does shipping take?",
    "Can I change my order after paying?",
    "Do you ship abroad?",
    "How do I contact support?",
]


def text(rng: random.Random, topic: str, num_tokens: int, tok: Any) -> str:
    words = TOPICS[topic]
    sentences: list[str] = []
    while len(tok.encode(" ".join(sentences))) < num_tokens:
        w = rng.sample(words, 3)
        sentences.append(f"The {w[0]} {rng.choice(VERBS)} the {w[1]} near the {w[2]}.")
    return " ".join(sentences)


class Run:
    """One workload under one setting: TTFTs, tokens and timings of its requests."""

    def __init__(self, llm: Any, chat: Any, max_tokens: int) -> None:
        from engine import SamplingParams

        self.llm, self.chat = llm, chat
        self.params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        self.ttft: list[float] = []
        self.tokens = 0
        self.start = time.perf_counter()

    async def ask(self, messages: list[dict[str, str]]) -> str:
        sent = time.perf_counter()
        first = None
        text = []
        async for delta in self.llm.stream(self.chat(messages), self.params):
            if first is None and delta.token_ids:
                first = time.perf_counter()
                self.ttft.append(first - sent)
            self.tokens += len(delta.token_ids)
            text.append(delta.text)
        return "".join(text)

    async def at(self, t: float) -> None:
        await asyncio.sleep(max(0.0, self.start + t - time.perf_counter()))


async def run_sessions(run: Run, rng: random.Random, spec: dict[str, Any]) -> None:
    system = spec["system"]

    async def session(t: float, turns: int) -> None:
        await run.at(t)
        messages = [{"role": "system", "content": system}]
        for _ in range(turns):
            messages.append({"role": "user", "content": rng.choice(CHAT_QUESTIONS)})
            answer = await run.ask(messages)
            messages.append({"role": "assistant", "content": answer})
            await asyncio.sleep(rng.expovariate(2.0))  # the user reads, then types

    t, tasks = 0.0, []
    for _ in range(spec["sessions"]):
        tasks.append(session(t, rng.randint(3, 5)))
        t += rng.expovariate(spec["rate"] / 4)  # ~4 turns per session
    await asyncio.gather(*tasks)


async def run_independent(run: Run, rng: random.Random, prompts: list[str], rate: float) -> None:
    async def one(t: float, prompt: str) -> None:
        await run.at(t)
        await run.ask([{"role": "user", "content": prompt}])

    t, tasks = 0.0, []
    for prompt in prompts:
        tasks.append(one(t, prompt))
        t += rng.expovariate(rate)
    await asyncio.gather(*tasks)


def hot_documents(rng: random.Random, quick: bool, num_kv_blocks: int, tok: Any) -> list[str]:
    """Documents that together need ~3x the pool, asked with Zipf-like popularity."""
    n_docs = 9
    doc_len = num_kv_blocks * 16 // 3  # tokens: a pool holds three of the nine
    topics = list(TOPICS)
    docs = [text(rng, topics[i % len(topics)], doc_len, tok) for i in range(n_docs)]
    docs = [f"Document {i} of the archive.\n{d}" for i, d in enumerate(docs)]  # distinct
    weights = [1 / (i + 1) for i in range(n_docs)]
    picks = rng.choices(range(n_docs), weights, k=24 if quick else 96)
    return [f"{docs[i]}\n\n{rng.choice(QUESTIONS)}" for i in picks]


def make_workloads(
    quick: bool, seed: int, tok: Any, rate: float, num_kv_blocks: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    topics = list(TOPICS)
    system = "You are the support assistant of a shop. Policies: " + text(
        rng, "banking", 250 if quick else 500, tok
    )
    n_docs, doc_len = (3, 400) if quick else (5, 800)
    docs = [text(rng, topics[i], doc_len, tok) for i in range(n_docs)]
    n_q = 4 if quick else 5
    doc_prompts = [f"{d}\n\n{q}" for d in docs for q in QUESTIONS[:n_q]]
    rng.shuffle(doc_prompts)
    unrelated = [
        f"Request {i}: "
        + text(rng, rng.choice(topics), 60 if quick else 200, tok)
        + "\nWhat does this say?"
        for i in range(10 if quick else 24)
    ]
    return {
        "sessions": {"system": system, "sessions": 3 if quick else 8, "rate": rate},
        "documents": doc_prompts,
        "hot_documents": hot_documents(rng, quick, num_kv_blocks, tok),
        "unrelated": unrelated,
    }
