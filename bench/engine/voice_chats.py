"""The conversations `bench decode` times one stream's decode on: voice turns as a
person has them with an assistant, in two kinds.

``reads_back``: the answer repeats what the conversation already holds (an order read
back for confirmation, a list said again, a sentence corrected, steps recapped), which
voice answers do often and prompt lookup can draft. ``open``: an answer made of new
words, where prompt lookup finds nothing to draft and speculation must cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

SYSTEM = "You are a helpful voice assistant. Answer in plain spoken sentences, no lists."


@dataclass(frozen=True)
class VoiceChat:
    """One conversation: its name, its kind and its messages (the last is the user's)."""

    name: str
    kind: str  # "reads_back" or "open"
    messages: tuple[tuple[str, str], ...]

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": SYSTEM}] + [
            {"role": role, "content": text} for role, text in self.messages
        ]


CHATS = (
    VoiceChat(
        "booking read back",
        "reads_back",
        (
            (
                "user",
                "I'd like to book a table for four people at Luigi's Trattoria on Friday "
                "the twelfth at seven thirty in the evening, under the name Margaret "
                "Johnson, phone number 555 0192, and we need a high chair for a toddler.",
            ),
            ("assistant", "Got it. Anything else for the booking?"),
            ("user", "No. Please read the whole booking back to me so I can check it."),
        ),
    ),
    VoiceChat(
        "list repeated",
        "reads_back",
        (
            (
                "user",
                "Add these to my shopping list: two litres of semi-skimmed milk, a dozen "
                "free-range eggs, a loaf of wholemeal bread, six ripe bananas, a jar of "
                "crunchy peanut butter, and a bag of basmati rice.",
            ),
            ("assistant", "Done, I added six items to your shopping list."),
            ("user", "Can you say the whole list back to me, item by item?"),
        ),
    ),
    VoiceChat(
        "sentence corrected",
        "reads_back",
        (
            (
                "user",
                "Fix the grammar of this sentence and say the corrected sentence: "
                "'Yesterday me and my brother goes to the market and buyed three kilos "
                "of apples, but when we comes home we seen that most of them was rotten.'",
            ),
        ),
    ),
    VoiceChat(
        "steps recapped",
        "reads_back",
        (
            ("user", "How do I reset my router?"),
            (
                "assistant",
                "First, unplug the router from the power socket. Then wait thirty "
                "seconds. Next, plug it back in and wait until the power light turns "
                "solid green. Finally, reconnect your devices to the network.",
            ),
            ("user", "Sorry, I missed that. Say the steps again, slowly."),
        ),
    ),
    VoiceChat("sky", "open", (("user", "Why is the sky blue?"),)),
    VoiceChat("sleep tip", "open", (("user", "Give me a tip for sleeping better."),)),
    VoiceChat("sky, Chinese", "open", (("user", "为什么天空是蓝色的？"),)),
)

KINDS = ("reads_back", "open")
