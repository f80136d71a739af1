"""Settings checked at start: a bad value is an error naming its variable."""

from __future__ import annotations

import pytest

from app.settings import Settings
from engine import BUNDLED_LLMS, DEFAULT_LLM
from tests.conftest import TEST_LLM, make_settings


def test_the_default_brain_is_the_bundled_1_5b_and_the_suite_runs_the_135m() -> None:
    assert Settings().llm_model == DEFAULT_LLM == "qwen2.5-coder-1.5b-instruct"
    assert DEFAULT_LLM in BUNDLED_LLMS and Settings().quantization is None  # its own: int4
    assert make_settings().llm_model == TEST_LLM == "smollm2-135m-instruct"
    assert make_settings(llm_model=DEFAULT_LLM).llm_model == DEFAULT_LLM
    assert Settings.from_env().llm_model == TEST_LLM  # servers started as subprocesses


def test_ice_servers_default_to_none_host_candidates_only() -> None:
    assert Settings().ice_server_list() == []


def test_ice_servers_as_the_browser_writes_them() -> None:
    servers = (
        '[{"urls": "stun:stun.example.com:3478"}, {"urls": ["turn:t.example.com:3478", '
        '"turns:t.example.com:5349"], "username": "u", "credential": "p"}]'
    )
    parsed = Settings(ice_servers=servers).ice_server_list()
    assert parsed[1]["username"] == "u" and len(parsed) == 2


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("stun:stun.example.com", "is not JSON"),
        ('{"urls": "stun:x"}', "must be a JSON list"),
        ('[{"url": "stun:x"}]', "must be an object with `urls`"),
        ('[{"urls": []}]', "must be a URL or a list of URLs"),
        ('[{"urls": "http://x"}]', "no stun:/turn: URL"),
        ('[{"urls": "turn:x", "username": 1}]', "username must be a string"),
        ('[{"urls": "turn:x", "password": "p"}]', "unknown fields"),
    ],
)
def test_bad_ice_servers_are_refused_naming_the_variable(value: str, says: str) -> None:
    with pytest.raises(ValueError, match="R1VOICE_ICE_SERVERS") as refused:
        Settings(ice_servers=value)
    assert says in str(refused.value)


def test_connect_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="R1VOICE_WEBRTC_CONNECT_TIMEOUT_S"):
        Settings(webrtc_connect_timeout_s=0)


@pytest.mark.parametrize("beam", [0, 11])
def test_a_final_beam_out_of_range_is_refused_naming_the_variable(beam: int) -> None:
    with pytest.raises(ValueError, match="R1VOICE_ASR_FINAL_BEAM"):
        Settings(asr_final_beam=beam)


def test_an_unknown_eagerness_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="R1VOICE_TURN_EAGERNESS") as refused:
        Settings(turn_eagerness="eager")
    assert "'eager'" in str(refused.value)


def test_speculation_and_block_size_reach_the_engine_as_its_config_fields() -> None:
    # prompt lookup: free; blocks of 4: a turn reuses the last one's KV to 3 tokens of its end
    assert Settings().engine_options() == {"speculative": "ngram", "block_size": 4}
    off = Settings(llm_speculative="off", llm_block_size=16).engine_options()
    assert off == {"speculative": "off", "block_size": 16}
    spec = Settings(llm_speculative="draft", llm_draft_model="qwen2.5-coder-0.5b-instruct")
    assert spec.engine_options() == {
        "speculative": "draft",
        "block_size": 4,
        "draft_model": "qwen2.5-coder-0.5b-instruct",
    }


def test_a_block_size_under_one_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="R1VOICE_LLM_BLOCK_SIZE"):
        Settings(llm_block_size=0)


def test_an_unknown_speculation_mode_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="R1VOICE_LLM_SPECULATIVE") as refused:
        Settings(llm_speculative="medusa")
    assert "'ngram'" in str(refused.value)


def test_a_draft_mode_without_a_draft_model_says_which_variable_to_set() -> None:
    with pytest.raises(ValueError, match="R1VOICE_LLM_DRAFT_MODEL"):
        Settings(llm_speculative="auto")
