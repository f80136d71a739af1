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
