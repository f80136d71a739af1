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


def result_note(names: list[str]) -> str:
    """The stage direction that makes the answer with the result: a user message kept out
    of the conversation, as an idle nudge's (responses/generation.py)."""
    tools = ", ".join(names)
    return (
        f"(The result of {tools} has arrived, above. Tell the user in one or two short "
        "sentences what it says, in the language they speak.)"
    )
