"""FastTokenizer answers as transformers' tokenizer does, on every bundled model."""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import transformers

from engine.loading.fast_tokenizer import FastTokenizer
from engine.loading.model_loader import load_tokenizer
from engine.loading.model_store import BUNDLED_LLMS, bundled_llm_dir, is_complete

TEXTS = [
    "Hello world",
    "",
    " leading space and trailing   ",
    "Paris, héllo 你好 🎉 — naïve café",
    unicodedata.normalize("NFD", "café naïve Ångström"),  # decomposed: NFC matters
    "<|im_start|>user\nHi<|im_end|>",
    "<think>\nfirst</think> then <tool_call>{}</tool_call>",
    "It's 3.14159 and I'll've 12,345 dollars\r\n\ttabs\n\n\nnewlines",
    "def f(x):\n    return x ** 2  # code\n",
    "北京是中国的首都。今天天气怎么样？",
    "<|endoftext|><|fim_prefix|>x<|fim_suffix|>",
]
CHATS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "You are a voice assistant. Answer in one sentence."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "北京的天气怎么样？"},
    ],
    [{"role": "user", "content": "a <|im_end|> inside, and 🎉", "name": None}],
    [{"role": "assistant", "content": "I think.", "reasoning_content": "hmm"}],
]
R1_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}"
)


def _bundled() -> list[Path]:
    dirs = [bundled_llm_dir(n) for n in BUNDLED_LLMS if is_complete(bundled_llm_dir(n))]
    if not dirs:
        pytest.skip("no bundled LLM is prepared (r1voice models prepare)")
    return dirs


@pytest.fixture(scope="module", params=[n for n in BUNDLED_LLMS])
def pair(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    model_dir = bundled_llm_dir(request.param)
    if not is_complete(model_dir):
        pytest.skip(f"{request.param} is not prepared (r1voice models prepare)")
    fast = load_tokenizer(model_dir)
    assert isinstance(fast, FastTokenizer)  # no transformers on the serving path
    return fast, transformers.AutoTokenizer.from_pretrained(str(model_dir))


def test_encode_and_batch_as_transformers(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    for text in TEXTS:
        for special in (True, False):
            assert fast.encode(text, add_special_tokens=special) == slow.encode(
                text, add_special_tokens=special
            ), text
            assert fast(text, add_special_tokens=special)["input_ids"] == list(
                slow(text, add_special_tokens=special)["input_ids"]
            )
    assert fast(TEXTS, add_special_tokens=False)["input_ids"] == [
        list(ids) for ids in slow(TEXTS, add_special_tokens=False)["input_ids"]
    ]


def test_decode_as_transformers(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    rng = random.Random(7)
    vocab = len(slow)
    specials = [slow.convert_tokens_to_ids(t) for t in ("<|im_start|>", "<|im_end|>")]
    sequences = [slow.encode(t) for t in TEXTS]
    sequences += [[rng.randrange(vocab) for _ in range(12)] + specials for _ in range(20)]
    for ids in sequences:
        for skip in (True, False):
            assert fast.decode(ids, skip_special_tokens=skip) == slow.decode(
                ids, skip_special_tokens=skip
            ), ids
    assert fast.decode(specials[0]) == slow.decode(specials[0])


def test_vocabulary_and_special_tokens_as_transformers(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    assert fast.get_vocab() == slow.get_vocab()
    assert len(fast) == len(slow)
    assert fast.special_tokens_map == slow.special_tokens_map
    for name in ("eos_token", "eos_token_id", "bos_token_id", "pad_token_id"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert fast.chat_template == slow.chat_template


def test_chat_template_as_transformers(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    for chat in CHATS:
        for generation in (True, False):
            args = {"add_generation_prompt": generation}
            text = fast.apply_chat_template(chat, tokenize=False, **args)
            assert text == slow.apply_chat_template(chat, tokenize=False, **args)
            ids = fast.apply_chat_template(chat, tokenize=True, **args)["input_ids"]
            assert ids == list(slow.apply_chat_template(chat, tokenize=True, **args)["input_ids"])
            assert fast.apply_chat_template(chat, return_dict=False, **args) == ids


def test_a_changed_template_renders_and_fails_as_transformers(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    saved = fast.chat_template
    try:
        fast.chat_template = slow.chat_template = R1_TEMPLATE
        chat = CHATS[0]
        assert fast.apply_chat_template(chat, add_generation_prompt=True, tokenize=False) == (
            slow.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        )
        fast.chat_template = slow.chat_template = "{{ raise_exception('roles must alternate') }}"
        for tokenizer in (fast, slow):
            with pytest.raises(Exception) as info:
                tokenizer.apply_chat_template(chat)
            assert (type(info.value).__name__, str(info.value)) == (
                "TemplateError",
                "roles must alternate",
            )
        fast.chat_template = slow.chat_template = (
            "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
            "{{ m | tojson }}{% endfor %}{{ ns.n }}{{ dict(a=1) | tojson }}"
        )
        assert fast.apply_chat_template(CHATS[1], tokenize=False) == slow.apply_chat_template(
            CHATS[1], tokenize=False
        )
    finally:
        fast.chat_template = slow.chat_template = saved


def test_what_it_does_not_do_itself_goes_to_transformers(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    ids = slow.encode("Hello world")
    assert fast.convert_ids_to_tokens(ids) == slow.convert_ids_to_tokens(ids)
    assert fast.encode("Hello", "world") == slow.encode("Hello", "world")  # a text pair
    assert fast("Hello", "world")["input_ids"] == list(slow("Hello", "world")["input_ids"])
    assert fast.decode(ids, clean_up_tokenization_spaces=True) == slow.decode(
        ids, clean_up_tokenization_spaces=True
    )
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert fast.apply_chat_template(CHATS[0], tools=tools, tokenize=False) == (
        slow.apply_chat_template(CHATS[0], tools=tools, tokenize=False)
    )


def test_other_tokenizer_settings_are_left_to_transformers(tmp_path: Path) -> None:
    source = _bundled()[0]
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (source / name).is_file():
            (tmp_path / name).write_bytes((source / name).read_bytes())
    assert FastTokenizer.load(tmp_path) is not None
    settings = json.loads((source / "tokenizer_config.json").read_text())
    for change in (
        {"tokenizer_class": "LlamaTokenizer"},
        {"clean_up_tokenization_spaces": True},
        {"backend": "sentencepiece"},
        {"eos_token": "<not-a-token>"},
    ):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({**settings, **change}))
        assert FastTokenizer.load(tmp_path) is None, change
        assert load_tokenizer(tmp_path) is None or not isinstance(
            load_tokenizer(tmp_path), FastTokenizer
        )


def _outcome(call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        out = call(*args, **kwargs)
    except Exception as exc:  # the error a caller sees is part of the answer
        return ("raised", type(exc).__name__)
    return ("ok", out.tolist() if hasattr(out, "tolist") else out)


def test_decode_takes_ids_in_every_form_transformers_takes(pair: tuple[Any, Any]) -> None:
    import numpy as np
    import torch

    fast, slow = pair
    ids = slow.encode("Hi 你好 🎉 <|im_end|>")
    for token_ids in (
        torch.tensor(ids),
        torch.tensor(ids[0]),  # one id as a 0-d tensor
        np.array(ids),
        [ids, ids[:2]],  # a batch: one text each
        {"input_ids": ids},
        [1.0],
        "12",
    ):
        for skip in (True, False):
            assert _outcome(fast.decode, token_ids, skip_special_tokens=skip) == (
                _outcome(slow.decode, token_ids, skip_special_tokens=skip)
            ), token_ids


def test_calls_transformers_answers_otherwise_are_handed_to_it(pair: tuple[Any, Any]) -> None:
    fast, slow = pair
    assert _outcome(fast, []) == _outcome(slow, [])
    chat = CHATS[1]
    # add_generation_prompt as the fifth positional argument (conversation, tools,
    # documents, chat_template, add_generation_prompt)
    assert fast.apply_chat_template(chat, None, None, None, True, tokenize=False) == (
        slow.apply_chat_template(chat, None, None, None, True, tokenize=False)
    )


def test_incremental_detokenization_as_over_transformers(pair: tuple[Any, Any]) -> None:
    from engine.detokenizer import IncrementalDetokenizer

    fast, slow = pair
    rng = random.Random(3)
    text = "Hello 你好 🎉👩‍👩‍👧 café <|im_end|> ok"
    for _ in range(10):
        ids = slow.encode(text, add_special_tokens=False)
        ids += [rng.randrange(len(slow)) for _ in range(8)]
        deltas = []
        for tokenizer in (fast, slow):
            detok = IncrementalDetokenizer(tokenizer, ids[:3])
            deltas.append([detok.add(t) for t in ids[3:]])
        assert deltas[0] == deltas[1]


def test_files_transformers_would_change_are_left_to_it(tmp_path: Path) -> None:
    """Extra special tokens in the config (transformers adds those missing from the file)
    and a truncation or padding saved in tokenizer.json (transformers' encode turns it off)."""
    source = _bundled()[0]
    settings = json.loads((source / "tokenizer_config.json").read_text())
    backend = json.loads((source / "tokenizer.json").read_text())
    truncation = {"max_length": 3, "stride": 0, "strategy": "LongestFirst", "direction": "Right"}
    text = "Hello there my dear friend <my_tok> again"
    for config_change, file_change in (
        ({"extra_special_tokens": ["<my_tok>"]}, {}),
        ({"additional_special_tokens": ["<my_tok>"]}, {}),
        ({}, {"truncation": truncation}),
    ):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({**settings, **config_change}))
        (tmp_path / "tokenizer.json").write_text(json.dumps({**backend, **file_change}))
        assert FastTokenizer.load(tmp_path) is None, (config_change, file_change)
        slow = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
        assert load_tokenizer(tmp_path).encode(text) == slow.encode(text)


def test_files_it_cannot_read_are_left_to_transformers(tmp_path: Path) -> None:
    """A tokenizer transformers cannot load either gives no tokenizer (token-id prompts
    only), as before: never an exception of FastTokenizer's own out of the load."""
    source = _bundled()[0]
    for bad_config, bad_backend in (("{not json", None), ("[]", None), (None, "{}")):
        for name, bad in (("tokenizer_config.json", bad_config), ("tokenizer.json", bad_backend)):
            (tmp_path / name).write_text(bad or (source / name).read_text())
        assert load_tokenizer(tmp_path) is None, (bad_config, bad_backend)


def test_encodings_read_by_attribute_as_transformers_batch_encoding(
    pair: tuple[Any, Any],
) -> None:
    fast, slow = pair
    for tokenizer in (fast, slow):
        with pytest.raises(AttributeError):
            _ = tokenizer("Hi").no_such_key
    assert fast("Hi 你好").input_ids == slow("Hi 你好").input_ids
    assert fast(["Hi", "你好"]).attention_mask == slow(["Hi", "你好"]).attention_mask
    chat = CHATS[1]
    assert fast.apply_chat_template(chat).input_ids == slow.apply_chat_template(chat).input_ids
