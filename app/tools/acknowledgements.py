"""What the assistant says, once, when a tool it called takes longer than a moment: the
conversation goes on, and the answer with the result comes when it is ready."""

from __future__ import annotations

CHECKING = {
    "en": "Let me check that.",
    "zh": "我查一下。",
    "es": "Déjame comprobarlo.",
    "fr": "Je vérifie.",
    "de": "Ich schaue kurz nach.",
    "it": "Controllo subito.",
    "pt": "Vou verificar.",
    "ja": "確認しますね。",
    "ko": "확인해 볼게요.",
    "ru": "Сейчас проверю.",
    "nl": "Ik zoek het even op.",
}


def checking(language: str | None) -> str:
    """The acknowledgement in `language` (ISO 639-1; English when it has none)."""
    return CHECKING.get((language or "en").split("-")[0].lower(), CHECKING["en"])


def result_note(results: list[tuple[str, str]]) -> str:
    """The stage direction that makes the answer from tools' results ((name, what the
    model reads of its end) each): a user message kept out of the conversation, as an
    idle nudge's (responses/generation.py). The small models here, left to read a
    `<tool_response>` alone, write JSON back; told the result last, they say it."""
    said = " ".join(f"{name} answered: {result.strip()}" for name, result in results)
    return (
        f"(The tools have answered. {said} Tell the user in one or two short spoken "
        "sentences what this means for their question, in the language they speak, "
        "without JSON.)"
    )


# what cancels a call still running, said as a whole turn ("never mind", "算了")
CANCELS = ("never mind", "nevermind", "cancel that", "cancel it", "forget it", "forget about it")
CANCELS_ZH = ("算了", "不用了", "取消")


def cancels(text: str) -> bool:
    """Whether a user turn asks to cancel what is running (the whole turn is little more
    than the phrase: "never mind the weather, what time is it" asks something else)."""
    said = " ".join(text.lower().replace(",", " ").replace(".", " ").replace("!", " ").split())
    short = len(said.split()) <= 5 or len(said) <= 8
    return short and (any(p in said for p in CANCELS) or any(p in said for p in CANCELS_ZH))


def cancelled_note(names: list[str]) -> str:
    tools = ", ".join(names)
    return (
        f"(The user cancelled the {tools} call, which is now stopped. Say in a few words, "
        "in the language they speak, that it is cancelled.)"
    )
