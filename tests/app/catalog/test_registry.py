"""Bundled models: stable names, clear errors naming the fix, the `r1voice models` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.catalog import registry as model_registry
from app.cli import main


def test_every_bundled_name_is_ready() -> None:
    rows = {row.name: row for row in model_registry.list_models()}
    for name in (
        "smollm2-135m-instruct",
        "whisper-tiny.en",
        "whisper-base",
        "piper-en_US-joe-medium",
        "all-minilm-l6-v2",
    ):
        assert rows[name].state == "ready", rows[name]


def test_unprepared_model_says_which_command_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("R1VOICE_CACHE", str(tmp_path))
    with pytest.raises(model_registry.ModelError, match=r"'whisper-base'.*r1voice models prepare"):
        model_registry.locate("whisper-base")
    with pytest.raises(
        model_registry.ModelError, match=r"'smollm2-135m-instruct'.*r1voice models prepare"
    ):
        model_registry.locate("smollm2-135m-instruct")


def test_unknown_model_lists_known_names() -> None:
    with pytest.raises(model_registry.ModelError, match=r"whisper-tiny\.en"):
        model_registry.locate("whisper-huge", "asr")


def test_cli_prepare_unknown_model_fails_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "prepare", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'no-such-model'" in err
    assert "Traceback" not in err


def test_cli_list_shows_roles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "whisper-tiny.en" in out and "asr" in out and "tts" in out


def test_cli_list_marks_what_serve_loads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user could not tell from the list which model the server would load."""
    monkeypatch.setenv("R1VOICE_LLM_MODEL", "qwen2.5-coder-0.5b-instruct")
    assert main(["models", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["MODEL", "ROLE", "SERVED", "STATE", "LOCATION"]
    served = [line.split()[0] for line in lines[1:] if line.split()[2:3] == ["yes"]]
    assert served == ["qwen2.5-coder-0.5b-instruct", "whisper-tiny.en", "piper-en_US-joe-medium"]
    monkeypatch.setenv("R1VOICE_ASR_THREADS", "many")  # a bad setting: still a list
    assert main(["models", "list"]) == 0
    assert "yes" not in capsys.readouterr().out.split("SERVED:")[0].split("\n", 1)[1]


def test_whisper_base_prepare_joins_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("R1VOICE_CACHE", str(tmp_path))
    path = model_registry.MODELS["whisper-base"].prepare(False)  # type: ignore[misc]
    assert (path / "model.bin").stat().st_size > 100_000_000
    assert model_registry.locate("whisper-base") == path
