"""Pipecat's `OpenAILiveLLMService` (pipecat-ai 1.14, unmodified) in a real Pipecat
pipeline, pointed at r1voice by its URL only. The pipeline (pipecat_live_pipeline.py)
runs in `.venv-pipecat`, Pipecat's own environment, against a real server here: it
streams a person's speech at real-time pace (or starts with a user message: a text
turn), appends instructions once the session has started, gets the user's transcript,
the answer's words and audio, and closes the session by ending the pipeline."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.audio import PROTOCOL_RATE
from app.llm.catalog import LLMCatalog
from tests.clients.conftest import BARGE_IN_S, SHORT_ANSWER, serve, speech_pcm
from tests.conftest import app_with
from tests.fakes import ScriptedLLM

ROOT = Path(__file__).resolve().parents[2]
PIPECAT_PYTHON = ROOT / ".venv-pipecat" / "bin" / "python"
PIPELINE = Path(__file__).parent / "pipecat_live_pipeline.py"
APPENDED = "Always name the city you mean."

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not PIPECAT_PYTHON.exists(), reason="no .venv-pipecat: `make test`"),
]


def run_pipeline(
    components: Any,
    tmp_path: Path,
    *args: str,
    scripts: tuple[list[str], ...] = (SHORT_ANSWER,),
    backend: ScriptedLLM | None = None,
    served: ScriptedLLM | None = None,
) -> tuple[dict[str, Any], ScriptedLLM]:
    """The Pipecat pipeline against a real server whose LLM says `scripts` in turn (the
    pipeline waits for the last one), its delegations going to a second server whose LLM
    is `backend` when one is given, or to the same server's other models, all answered by
    `served` (server delegation); returns the pipeline's JSON result and the server's
    scripted LLM (its prompts)."""
    llm = ScriptedLLM(list(scripts))
    out = tmp_path / "result.json"
    with contextlib.ExitStack() as servers:
        live = dataclasses.replace(components, llm=llm)
        if served is not None:
            live = dataclasses.replace(live, llms=LLMCatalog(llm, load=lambda _name: served))
        address = servers.enter_context(serve(app_with(live)))
        if backend is not None:
            app = app_with(dataclasses.replace(components, llm=backend))
            args = (*args, "--backend-url", f"http://{servers.enter_context(serve(app))}/v1")
        run = subprocess.run(
            [
                str(PIPECAT_PYTHON), str(PIPELINE), "--url", f"ws://{address}/v1/live/sessions",
                "--append", APPENDED, "--expect", "".join(scripts[-1]), "--out", str(out), *args,
            ],
            capture_output=True,
            text=True,
            timeout=500,
        )  # fmt: skip
    assert run.returncode == 0 and out.exists(), run.stdout[-3000:] + run.stderr[-6000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result, llm


def check_conversation(
    result: dict[str, Any], llm: ScriptedLLM, answer: list[str] = SHORT_ANSWER, warned: str = "-"
) -> None:
    """What every conversation shows: no error, the answer's words and audio reached the
    end of the pipeline, the service handled every server event, the instructions append
    was acknowledged, ending the pipeline closed the session, and the service warned of
    nothing (but `warned`)."""
    log = "\n".join(result["log"])
    assert result["errors"] == [], log[-4000:]
    (session,) = result["sessions"]
    assert session["model"] == "gpt-live-1" and session["id"]
    assert "".join(result["said"]).endswith("".join(answer))  # after a cut turn's
    assert result["ends"][-1].endswith("".join(answer))  # the answer's turn ended
    assert result["audio_bytes"] >= PROTOCOL_RATE  # half a second of PCM16 at 24 kHz
    warnings = [line for line in result["log"] if line.startswith(("WARNING", "ERROR"))]
    assert [line for line in warnings if warned not in line] == []  # but the one expected
    assert "unparseable server event" not in log
    assert "ignoring unknown server event" not in log
    assert "session closed (close_requested)" in log  # session.close -> session.closed
    assert "timed out waiting for session.closed" not in log
    assert "session.instructions.appended" in log  # the append's acknowledgement
    said = [m.get("content") for m in result["context"] if m["role"] == "assistant"]
    answers = [text for text in said if isinstance(text, str)]  # not tool calls
    assert answers and answers[-1].strip().endswith("".join(answer)), answers


def test_spoken_conversation(shared_components: Any, tmp_path: Path) -> None:
    speech = tmp_path / "speech.pcm"
    speech.write_bytes(speech_pcm(BARGE_IN_S))
    result, llm = run_pipeline(shared_components, tmp_path, "--speech", str(speech))
    check_conversation(result, llm)
    # The instructions appended once the session started reached every answer's prompt.
    assert llm.prompts and all(APPENDED in str(p) for p in llm.prompts)
    # The service's transcript of the speech went upstream to the user aggregator,
    # which wrote it into the context.
    assert result["downstream_transcripts"] == 0
    heard = " ".join(m["content"] for m in result["context"] if m["role"] == "user").lower()
    # "And so, my fellow Americans"; a pause after "And so" may end the turn there
    assert any(w in heard for w in ("and so", "fellow", "americans")), heard


def test_text_turn_from_the_context(shared_components: Any, tmp_path: Path) -> None:
    """The context's user message seeds the session's `input`: answered at once."""
    result, llm = run_pipeline(
        shared_components, tmp_path, "--speech", "-", "--question", "Capital of France?"
    )
    check_conversation(result, llm)
    assert "Capital of France?" in str(llm.prompts[0])


DELEGATE = ['<tool_call>{"name": "delegate", "arguments": {"task": "Prove it."}}</tool_call>']
WAIT = ["Let me look ", "into that."]
ANSWER = ["The answer ", "is forty-two."]
HARD = "Why 42? Prove it."


def test_a_delegation_is_declined_without_a_backend(shared_components: Any, tmp_path: Path) -> None:
    """The service's default (no backend): it answers the server's
    `session.delegation.created` with commentary for that delegation saying it has no
    backend, which the live model passes on."""
    result, llm = run_pipeline(
        shared_components, tmp_path, "--speech", "-", "--question", HARD,
        scripts=(DELEGATE, WAIT, ANSWER),
    )  # fmt: skip
    check_conversation(result, llm, ANSWER, warned="no backend is configured")
    ((delegation),) = result["delegations"]
    assert delegation["target"] == "client" and delegation["id"]
    assert "No backend is available" in str(llm.prompts[-1])


def test_a_delegation_is_answered_by_a_pipecat_backend_worker(
    shared_components: Any, tmp_path: Path
) -> None:
    """`ClientDelegation` with Pipecat's `BackendLLMWorker`, its LLM on a second r1voice's
    chat completions: the backend's spoken output comes back as the delegation's
    commentary, which the live model passes on."""
    backend = ScriptedLLM([[">> Six times seven ", "is forty-two."]])
    result, llm = run_pipeline(
        shared_components, tmp_path, "--speech", "-", "--question", HARD,
        scripts=(DELEGATE, WAIT, ANSWER), backend=backend,
    )  # fmt: skip
    check_conversation(result, llm, ANSWER)
    ((delegation),) = result["delegations"]
    assert delegation["target"] == "client"
    assert backend.prompts  # the worker's LLM was asked
    assert "Six times seven is forty-two." in str(llm.prompts[-1])


def test_server_delegation_calls_a_pipecat_function(shared_components: Any, tmp_path: Path) -> None:
    """`ResponsesDelegation` with a function tool in the pipeline's context: the server's
    delegated model calls it, the service runs the pipeline's handler and sends its output
    (`response.item.create`, `response.create`), and the task's conclusion is spoken."""
    backend = "qwen2.5-coder-1.5b-instruct"
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    conclusion = ["It is sunny ", "in Paris."]
    served = ScriptedLLM([[call], conclusion])
    # the live model's third script is never asked for: the conclusion is said as it is
    result, llm = run_pipeline(
        shared_components, tmp_path, "--speech", "-", "--question", "Weather in Paris?",
        "--responses-model", backend, scripts=(DELEGATE, WAIT, conclusion), served=served,
    )  # fmt: skip
    check_conversation(result, llm, conclusion)
    ((delegation),) = result["delegations"]
    assert delegation["target"] == "responses"
    assert result["calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert len(served.prompts) == 2 and "sunny" in str(served.prompts[1][-1])
    # the service's Responses settings: the instructions and the output budget
    assert "You work out hard questions." in served.prompts[0][0].content
    assert [p.max_tokens for p in served.params] == [64, 64]
    assert len(llm.prompts) == 2  # the question and the acknowledgement: no model rewrites it


def test_the_bot_speaks_first(shared_components: Any, tmp_path: Path) -> None:
    """A context ending with a developer message: the service sends it as commentary
    once the session has started (Pipecat's way to open the conversation), and the live
    model speaks first."""
    opening = "Greet the user and ask how you can help."
    result, llm = run_pipeline(
        shared_components, tmp_path, "--speech", "-", "--opening", opening,
        scripts=(["Hello! ", "How can I help?"],),
    )  # fmt: skip
    check_conversation(result, llm, ["Hello! ", "How can I help?"])
    (prompt,) = llm.prompts
    assert opening in str(prompt)
