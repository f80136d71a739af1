"""The languages Whisper transcribes, which ones a model can, and Chinese in one script.

A session names its language with an ISO 639-1 code as OpenAI's API does ("zh"); a
BCP 47 tag ("zh-CN", "en_US") is read by its language subtag. A model whose name ends in
".en", or whose vocabulary lacks the language tokens, transcribes English alone.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from faster_whisper.tokenizer import _LANGUAGE_CODES

WHISPER_LANGUAGES: tuple[str, ...] = tuple(_LANGUAGE_CODES)
ENGLISH_ONLY: tuple[str, ...] = ("en",)
MULTILINGUAL_VOCABULARY = 51865  # Whisper's vocabulary with its language tokens


# The names the LLM is told (the rest are named by their code).
_NAMES = {
    "en": "English", "zh": "Chinese (Mandarin, simplified characters)", "ja": "Japanese",
    "ko": "Korean", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian",
    "pt": "Portuguese", "ru": "Russian", "ar": "Arabic", "hi": "Hindi", "nl": "Dutch",
    "pl": "Polish", "tr": "Turkish", "vi": "Vietnamese", "th": "Thai", "id": "Indonesian",
    "uk": "Ukrainian", "sv": "Swedish", "yue": "Cantonese",
}  # fmt: skip


def language_name(code: str) -> str:
    return _NAMES.get(code, f"the language with ISO code '{code}'")


def normalize(code: str | None) -> str | None:
    """'zh-CN' -> 'zh'; None or '' -> None (detect the language of each turn)."""
    if not code or not code.strip():
        return None
    return code.strip().replace("_", "-").split("-")[0].lower()


def model_languages(name: str, model_dir: Path | None = None) -> tuple[str, ...]:
    """What the model can transcribe, without loading it."""
    if name.endswith(".en"):
        return ENGLISH_ONLY
    vocabulary = model_dir / "vocabulary.json" if model_dir is not None else None
    if vocabulary is not None and vocabulary.is_file():
        try:
            if len(json.loads(vocabulary.read_text(encoding="utf-8"))) < MULTILINGUAL_VOCABULARY:
                return ENGLISH_ONLY
        except (OSError, ValueError):
            pass  # unreadable here: loading the model will say what is wrong
    return WHISPER_LANGUAGES


def language_error(code: str, model: str, supported: tuple[str, ...], others: list[str]) -> str:
    """Why `model` cannot take `code` (a refusal's message), and what to do."""
    if code not in WHISPER_LANGUAGES:
        return (
            f"language '{code}' is not a language Whisper knows; use an ISO 639-1 code "
            f"that '{model}' transcribes ({', '.join(supported)}), or null to detect it"
        )
    hint = f"choose {', '.join(repr(o) for o in others)}" if others else "add a multilingual model"
    return f"'{model}' transcribes only {', '.join(supported)}; for '{code}' {hint}"


@functools.cache
def _t2s() -> Any:
    import opencc

    return opencc.OpenCC("t2s")


def simplified(text: str) -> str:
    """Chinese text in simplified characters (Whisper writes traditional ones at times)."""
    return str(_t2s().convert(text)) if text else text
