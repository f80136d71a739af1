"""`GET /v1/r1voice/components`: what a session can use, stage by stage (read-only).

The page builds its drag-and-drop palettes from this. Each stage lists components as
`{"id", "label", "available", "reason", "active"}`; `id` is the value a client sends in
`session.update` (a voice name, a transcription model, an LLM, a turn-detection type,
`null` meaning manual turns). Unavailable components say why, so the page can explain a refusal
before the user tries.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.server.state import HttpState

router = APIRouter(prefix="/v1/r1voice", tags=["page"])


def _entry(
    id_: str | None, label: str, *, available: bool = True, reason: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {"id": id_, "label": label, "available": available, "reason": reason, **extra}


@functools.lru_cache(maxsize=1)
def _espeak_language_names() -> dict[str, str]:
    """espeak-ng language code -> its name ("de" -> "German"); empty when absent."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        return {}
    try:
        listing = subprocess.run(
            [binary, "--voices"], capture_output=True, text=True, check=False, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    names = {}
    for line in listing.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 4:
            names[cols[1]] = cols[3].replace("_", " ")
    return names


def _semantic_vad_supported() -> bool:
    """Whether the protocol schema accepts `turn_detection.type: semantic_vad`."""
    try:
        from app.protocol import session_schema

        session_schema.TurnDetection.model_validate({"type": "semantic_vad"})
    except Exception:
        return False
    return True


def _asr(transcribers: Any) -> list[dict[str, Any]]:
    """The ASR models: those a session may choose, then the bundled ones not installed."""
    default = transcribers.default.name
    rows = []
    for name in transcribers.names():
        loaded = transcribers.loaded(name) is not None
        note = (
            "the server's default"
            if name == default
            else ("loaded" if loaded else "loads when first chosen (about a second)")
        )
        languages = list(transcribers.languages(name))
        said = "English only" if languages == ["en"] else f"{len(languages)} languages"
        rows.append(
            _entry(
                name,
                f"{name} ({said})",
                active=name == default,
                loaded=loaded,
                languages=languages,
                description=f"faster-whisper {name}, {said}; {note}",
            )
        )
    for name, reason in transcribers.unavailable().items():
        rows.append(_entry(name, name, available=False, reason=reason))
    return rows


def _llm(llms: Any) -> list[dict[str, Any]]:
    """The LLMs: those a session may choose (the server's first), then the others."""
    default = llms.default
    rows = []
    for name in llms.names():
        loaded = llms.loaded(name) is not None
        note = (
            "the server's default"
            if name == default.model
            else ("loaded" if loaded else "loads when first chosen (a few seconds)")
        )
        rows.append(
            _entry(
                name,
                name,
                backend=default.name,
                model=name,
                active=name == default.model,
                loaded=loaded,
                description=f"served by the '{default.name}' backend; {note}",
            )
        )
    for name, reason in llms.unavailable().items():
        rows.append(_entry(name, name, available=False, reason=reason, model=name))
    return rows


def _turn_detection() -> list[dict[str, Any]]:
    semantic = _semantic_vad_supported()
    return [
        _entry(
            "server_vad",
            "Server VAD (hands-free)",
            description="Silero voice activity detection ends the turn after a silence",
        ),
        _entry(
            None,
            "Manual (push-to-talk)",
            description="No turn detection: hold Talk or the space bar, release to send",
        ),
        _entry(
            "semantic_vad",
            "Semantic VAD",
            available=semantic,
            reason=None if semantic else "not implemented yet",
            description="Ends the turn once you have finished your sentence "
            "(OpenAI's semantic_vad; eagerness sets how long it waits)",
        ),
    ]


def _voices(tts: Any) -> list[dict[str, Any]]:
    names = _espeak_language_names()
    default = getattr(tts, "default_name", None)
    rows = []
    for voice in tts.voices():
        language = tts.language(voice) if voice != "auto" else None
        if voice == default:
            rows.append(_entry(voice, voice, engine="piper", default=True, language=language))
        elif voice == "auto":
            label = "Auto: a voice of the answer's language"
            rows.append(_entry(voice, label, engine="auto"))
        elif voice.startswith("piper-"):
            rows.append(_entry(voice, f"{voice} ({language})", engine="piper", language=language))
        elif voice == "espeak-ng":
            rows.append(_entry(voice, "espeak-ng (English)", engine="espeak-ng", language="en-us"))
        elif voice.startswith("espeak-ng:"):
            lang = voice.partition(":")[2]
            label = f"espeak-ng: {names.get(lang, lang)}"
            rows.append(_entry(voice, label, engine="espeak-ng", language=lang))
        elif voice == "coqui":
            rows.append(_entry(voice, "Coqui TTS", engine="coqui"))
        else:  # OpenAI's names: aliases of the default voice
            rows.append(_entry(voice, f"{voice} (= {default})", engine="alias", alias_of=default))
    for voice, reason in getattr(tts, "unavailable", {}).items():
        rows.append(_entry(voice, voice, available=False, reason=reason, engine="piper"))
    return rows


@router.get("/components")
async def components(state: HttpState) -> JSONResponse:
    """The components of each pipeline stage and whether this server can use them."""
    loaded = state.components
    if loaded is None:
        return JSONResponse(
            {
                "ready": False,
                "error": state.load_error or "the server is loading its models; retry shortly",
            },
            status_code=503,
            headers={"Retry-After": "2"},
        )
    return JSONResponse(
        {
            "ready": state.ready,
            "asr": _asr(loaded.transcribers),
            "turn_detection": _turn_detection(),
            "llm": _llm(loaded.llms),
            "tts": _voices(loaded.tts),
        }
    )
