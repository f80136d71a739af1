"""FastTokenizer: a model directory's tokenizer on `tokenizers` alone, as transformers 5
builds it, for the directories r1voice prepared (their files written by transformers).

Importing transformers and building its tokenizer cost a cold start one to two seconds.
What the engine and the app call on every request (encode, decode, the chat template,
the vocabulary, the special tokens) runs here on the same Rust tokenizer transformers
would build; anything else is handed to transformers' own tokenizer, loaded then.
Tests compare every answer with transformers' on the bundled models.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from engine.loading.template_env import GENERATION_TAG, compile_template
from engine.loading.transformers_lock import TRANSFORMERS_LOCK

# the names transformers' ``special_tokens_map`` gives a template, in its order
SPECIAL_TOKENS: tuple[str, ...] = ("bos_token", "eos_token", "unk_token", "sep_token")
SPECIAL_TOKENS += ("pad_token", "cls_token", "mask_token")
_QWEN2_SPLIT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"""
    r"""[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
_BPE_AS_QWEN2 = {
    "dropout": None,
    "unk_token": None,
    "continuing_subword_prefix": "",
    "end_of_word_suffix": "",
    "fuse_unk": False,
    "byte_fallback": False,
    "ignore_merges": False,
}
_CHAT_ARGS = {"add_generation_prompt", "tokenize", "return_dict"}
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class Encoding(dict[str, Any]):
    """What encoding returns, read as transformers' BatchEncoding is: by key or attribute."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class FastTokenizer:
    """``FastTokenizer.load(model_dir)``: the tokenizer, or None when this directory's
    needs transformers (another tokenizer class, settings this class does not read)."""

    def __init__(self, model_dir: Path, backend: Any, settings: dict[str, Any]) -> None:
        self.model_dir = model_dir
        self.backend = backend  # tokenizers.Tokenizer
        self._settings = settings
        self._chat_template: str | None = None
        template_file = model_dir / "chat_template.jinja"
        if template_file.is_file():
            self._chat_template = template_file.read_text(encoding="utf-8")
        elif isinstance(settings.get("chat_template"), str):
            self._chat_template = settings["chat_template"]
        self.special_tokens_map = {
            name: str(settings[name]) for name in SPECIAL_TOKENS if settings.get(name) is not None
        }
        self._slow_tokenizer: Any = None
        self._slow_lock = threading.Lock()

    @classmethod
    def load(cls, model_dir: Path) -> FastTokenizer | None:
        files = [model_dir / n for n in ("tokenizer.json", "tokenizer_config.json")]
        if not all(f.is_file() for f in files):
            return None
        settings = json.loads(files[1].read_text(encoding="utf-8"))
        kind = settings.get("tokenizer_class")
        if (
            settings.get("backend") != "tokenizers"  # not written by transformers 5
            or kind not in ("TokenizersBackend", "Qwen2Tokenizer")
            or any(not isinstance(settings.get(n, ""), str | None) for n in SPECIAL_TOKENS)
            or any(n not in settings for n in ("bos_token", "eos_token", "unk_token", "pad_token"))
            or settings.get("clean_up_tokenization_spaces")
            or settings.get("split_special_tokens")
            or ("chat_template" in settings and not isinstance(settings["chat_template"], str))
            or (model_dir / "additional_chat_templates").exists()
            # transformers adds these tokens to the file's (and special_tokens_map)
            or settings.get("extra_special_tokens")
            or settings.get("additional_special_tokens")
        ):
            return None
        from tokenizers import Tokenizer

        backend = Tokenizer.from_file(str(files[0]))
        # (transformers' encode sets truncation and padding per call: none by default)
        if backend.truncation is not None or backend.padding is not None:
            return None
        if not _added_tokens_agree(backend, settings):
            return None
        if kind == "Qwen2Tokenizer" and not _as_qwen2(backend, settings):
            return None
        return cls(model_dir, backend, settings)

    # ---- the special tokens --------------------------------------------------------

    def _token_id(self, name: str) -> int | None:
        token = self.special_tokens_map.get(name)
        return None if token is None else self.backend.token_to_id(token)

    @property
    def eos_token(self) -> str | None:
        return self.special_tokens_map.get("eos_token")

    @property
    def eos_token_id(self) -> int | None:
        return self._token_id("eos_token")

    @property
    def bos_token_id(self) -> int | None:
        return self._token_id("bos_token")

    @property
    def pad_token_id(self) -> int | None:
        return self._token_id("pad_token")

    # ---- encode and decode ---------------------------------------------------------

    # (transformers' second positional argument is a text pair: any is handed to it)
    def encode(
        self, text: str, *args: Any, add_special_tokens: bool = True, **kwargs: Any
    ) -> list[int]:
        if args or kwargs or not isinstance(text, str):
            slow = self._slow()
            return list(slow.encode(text, *args, add_special_tokens=add_special_tokens, **kwargs))
        return list(self.backend.encode(text, add_special_tokens=add_special_tokens).ids)

    def __call__(
        self, text: Any, *args: Any, add_special_tokens: bool = True, **kwargs: Any
    ) -> Any:
        if args or kwargs or (not isinstance(text, str) and not text):  # [] raises there
            return self._slow()(text, *args, add_special_tokens=add_special_tokens, **kwargs)
        if isinstance(text, str):
            ids = self.encode(text, add_special_tokens=add_special_tokens)
            return Encoding(input_ids=ids, attention_mask=[1] * len(ids))
        texts = list(text)
        if not all(isinstance(t, str) for t in texts):
            return self._slow()(text, add_special_tokens=add_special_tokens)
        encoded = self.backend.encode_batch(texts, add_special_tokens=add_special_tokens)
        batch = [list(e.ids) for e in encoded]
        return Encoding(input_ids=batch, attention_mask=[[1] * len(i) for i in batch])

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> Any:
        ids = token_ids.tolist() if hasattr(token_ids, "tolist") else token_ids  # a tensor
        ids = [ids] if type(ids) is int else ids
        # a batch, a dict, anything but plain ids (and their errors): as transformers does
        if kwargs or not isinstance(ids, list | tuple) or any(type(t) is not int for t in ids):
            return self._slow().decode(token_ids, skip_special_tokens=skip_special_tokens, **kwargs)
        return str(self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def get_vocab(self) -> dict[str, int]:
        return dict(self.backend.get_vocab(with_added_tokens=True))

    def __len__(self) -> int:
        return int(self.backend.get_vocab_size(with_added_tokens=True))

    # ---- the chat template ---------------------------------------------------------

    @property
    def chat_template(self) -> str | None:
        return self._chat_template

    @chat_template.setter
    def chat_template(self, value: str | None) -> None:
        self._chat_template = value
        if self._slow_tokenizer is not None:
            self._slow_tokenizer.chat_template = value

    def apply_chat_template(self, conversation: Any, *args: Any, **kwargs: Any) -> Any:
        """transformers' ``apply_chat_template`` for one conversation of plain messages
        (``add_generation_prompt``, ``tokenize``, ``return_dict``); anything else (tools,
        documents, batches, masks, a template's own variables) goes to transformers."""
        template = self._chat_template
        chat = _plain_chat(conversation)
        if (
            args
            or set(kwargs) - _CHAT_ARGS
            or chat is None
            or template is None
            or GENERATION_TAG.search(template)
        ):
            return self._slow().apply_chat_template(conversation, *args, **kwargs)
        rendered = compile_template(template).render(
            messages=chat,
            tools=None,
            documents=None,
            add_generation_prompt=bool(kwargs.get("add_generation_prompt", False)),
            **self.special_tokens_map,
        )
        if not kwargs.get("tokenize", True):
            return rendered
        out = self(rendered, add_special_tokens=False)
        return out if kwargs.get("return_dict", True) else out["input_ids"]

    # ---- everything else: transformers ---------------------------------------------

    def _slow(self) -> Any:
        with self._slow_lock:
            if self._slow_tokenizer is None:
                with TRANSFORMERS_LOCK:
                    import transformers

                    slow = transformers.AutoTokenizer.from_pretrained(str(self.model_dir))
                slow.chat_template = self._chat_template
                self._slow_tokenizer = slow
            return self._slow_tokenizer

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._slow(), name)


def _added_tokens_agree(backend: Any, settings: dict[str, Any]) -> bool:
    """Whether transformers would add no token to the file's, nor change one: each named
    special token is one of the file's added special tokens, and the config's
    ``added_tokens_decoder`` (if any) says what the file says of each."""
    added = backend.get_added_tokens_decoder()
    specials = {t.content for t in added.values() if t.special}
    named = [settings[n] for n in SPECIAL_TOKENS if settings.get(n) is not None]
    if not set(named) <= specials:
        return False
    flags = ("content", "special", "lstrip", "rstrip", "normalized", "single_word")
    for key, entry in (settings.get("added_tokens_decoder") or {}).items():
        token = added.get(int(key))
        if token is None or any(entry.get(f) != getattr(token, f) for f in flags):
            return False
    return True


def _as_qwen2(backend: Any, settings: dict[str, Any]) -> bool:
    """Give ``backend`` (tokenizer.json as written) the normalizer, pre-tokenizer and
    decoder transformers' Qwen2Tokenizer builds around the file's vocabulary and merges;
    False when the file's BPE settings differ from the ones it builds."""
    from tokenizers import Regex, decoders, normalizers, pre_tokenizers

    model = backend.model
    if type(model).__name__ != "BPE":
        return False
    if any(getattr(model, k, None) != v for k, v in _BPE_AS_QWEN2.items()):
        return False
    prefix = settings.get("add_prefix_space")
    backend.decoder = decoders.ByteLevel()
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=bool(prefix), use_regex=False),
        ]
    )
    return True


def _plain_chat(conversation: Any) -> list[dict[str, Any]] | None:
    """The messages as transformers hands them to a template (None values dropped, the
    reasoning aliases filled), or None when they are not plain text messages."""
    if not isinstance(conversation, list | tuple) or not conversation:
        return None
    chat = []
    for message in conversation:
        if not isinstance(message, dict) or not all(
            type(k) is str and (v is None or type(v) is str) for k, v in message.items()
        ):
            return None
        plain = {k: v for k, v in message.items() if v is not None}
        reasoning = next((plain[k] for k in _REASONING_FIELDS if plain.get(k) is not None), None)
        if reasoning is not None:
            plain = {"thinking": reasoning, **plain, "reasoning_content": reasoning}
        chat.append(plain)
    return chat
