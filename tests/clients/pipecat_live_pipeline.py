"""A Pipecat pipeline around Pipecat's `OpenAILiveLLMService`, pointed at a Live server by
its URL only, for tests/clients/test_pipecat_live.py. It runs in `.venv-pipecat` (Pipecat
with its own pinned dependencies, `make bench-pipecat`), so nothing here imports r1voice:

    .venv-pipecat/bin/python tests/clients/pipecat_live_pipeline.py --url ws://HOST/v1/live/sessions
        --speech FILE.pcm --append TEXT --expect WORDS --out RESULT.json [--question TEXT] [--opening TEXT]
        [--backend-url http://HOST/v1 | --responses-model NAME]

The pipeline is the one Pipecat documents for the service: the context aggregators
around it, audio frames in, speech audio and transcript frames out. It starts the session
from its context (a system message; `--question` adds a user message, a text turn;
`--opening` a last developer message, which the service sends as commentary once the
session has started: the bot speaks first),
appends `--append` as instructions once the session has started, streams the PCM16
24 kHz speech in 20 ms frames at real-time pace (none with `--speech -`), waits for an
answer saying `--expect` to end and ends the pipeline, which closes the session. The
model's delegations are declined (the service's default) or, with `--backend-url`, go to
a Pipecat backend worker (`ClientDelegation`) whose LLM is on that OpenAI-compatible URL,
or, with `--responses-model`, to the server (`ResponsesDelegation`) with a function tool,
`get_weather`, that the pipeline runs when the delegated model calls it.
The JSON result holds what reached the end of the pipeline, the context the aggregators
wrote, the delegations, the errors, and the service's own log lines (which name the
server events it handled or could not parse).
"""

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

RATE = 24_000
CHUNK_S = 0.02


async def converse(args: argparse.Namespace, pcm: bytes) -> dict[str, Any]:
    from loguru import logger
    from pipecat.frames.frames import (
        EndFrame,
        ErrorFrame,
        Frame,
        InputAudioRawFrame,
        LLMFullResponseEndFrame,
        LLMRunFrame,
        SpeechOutputAudioRawFrame,
        TranscriptionFrame,
        TTSTextFrame,
    )
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.runner import PipelineRunner
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.services.openai.live import events
    from pipecat.services.openai.live.llm import OpenAILiveLLMService

    log: list[str] = []
    logger.add(lambda m: log.append(f"{m.record['level'].name} {m.record['message']}"))

    class Recorder(FrameProcessor):
        """The last processor: counts what reaches the end of the pipeline."""

        def __init__(self) -> None:
            super().__init__()
            self.said: list[str] = []
            self.audio_bytes = 0
            self.ends: list[str] = []  # what had been said at each answer's end
            self.downstream_transcripts = 0
            self.changed = asyncio.Event()

        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, TTSTextFrame):
                self.said.append(frame.text)
            elif isinstance(frame, SpeechOutputAudioRawFrame):
                self.audio_bytes += len(frame.audio)
            elif isinstance(frame, LLMFullResponseEndFrame):
                self.ends.append("".join(self.said))
            elif isinstance(frame, TranscriptionFrame):
                self.downstream_transcripts += 1
            self.changed.set()
            await self.push_frame(frame, direction)

        async def until(self, done: Any) -> None:
            while not done():
                self.changed.clear()
                await self.changed.wait()

    delegation = None  # the service's default: it declines delegations, saying so
    if args.backend_url:  # client delegation to a Pipecat backend worker
        from pipecat.services.openai.llm import OpenAILLMService
        from pipecat.workers.llm.backend_llm_worker import BackendLLMWorker

        backend = OpenAILLMService(
            api_key="sk-test",
            base_url=args.backend_url,
            settings=OpenAILLMService.Settings(model="r1voice"),
        )
        instructions = [{"role": "system", "content": "You work out hard questions."}]
        worker_llm = BackendLLMWorker(llm=backend, context=LLMContext(messages=instructions))
        delegation = OpenAILiveLLMService.ClientDelegation(backend=worker_llm)
    tools: Any = None
    calls: list[Any] = []
    if args.responses_model:  # the server delegates, to its model, with our function tool
        from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
        from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
        from pipecat.services.openai.responses.llm import OpenAIResponsesLLMService

        settings = OpenAIResponsesLLMService.Settings(
            model=args.responses_model,
            system_instruction="You work out hard questions.",
            max_completion_tokens=64,
        )
        delegation = OpenAILiveLLMService.ResponsesDelegation(settings=settings)
        city = {"city": {"type": "string"}}
        weather = FunctionSchema("get_weather", "The weather in a city.", city, ["city"])
        tools = ToolsSchema(standard_tools=[weather])
    live = OpenAILiveLLMService(api_key="sk-test", base_url=args.url, delegation=delegation)

    async def get_weather(params: Any) -> None:
        calls.append({"name": params.function_name, "arguments": dict(params.arguments)})
        await params.result_callback({"weather": "sunny"})

    live.register_function("get_weather", get_weather)
    messages: list[Any] = [{"role": "system", "content": "Be brief."}]
    if args.question:
        messages.append({"role": "user", "content": args.question})
    if args.opening:  # Pipecat's way to have the bot speak first
        messages.append({"role": "developer", "content": args.opening})
    context = LLMContext(messages=messages, tools=tools) if tools else LLMContext(messages)
    turns = LLMContextAggregatorPair(context)
    recorder = Recorder()
    worker = PipelineWorker(
        Pipeline([turns.user(), live, recorder, turns.assistant()]),
        params=PipelineParams(audio_in_sample_rate=RATE),
        idle_timeout_secs=None,
    )
    errors: list[str] = []
    sessions: list[Any] = []
    delegations: list[Any] = []
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_error")
    async def on_error(_worker: Any, frame: ErrorFrame) -> None:
        errors.append(frame.error)

    @live.event_handler("on_session_started")
    async def on_started(service: Any, session: Any) -> None:
        sessions.append(session.model_dump(exclude_none=True))
        append = events.SessionInstructionsAppendEvent(delegation_id=None, content=args.append)
        await service.send_client_event(append)
        started.set()

    @live.event_handler("on_delegation_created")
    async def on_delegation(_service: Any, delegation: Any) -> None:
        delegations.append(delegation.model_dump(exclude_none=True))

    async def talk() -> None:
        try:
            await worker.queue_frame(LLMRunFrame())  # the service sends session.start
            await asyncio.wait_for(started.wait(), args.timeout)
            step = int(RATE * CHUNK_S) * 2
            for i in range(0, len(pcm), step):  # a microphone's pace
                await worker.queue_frame(InputAudioRawFrame(pcm[i : i + step], RATE, 1))
                await asyncio.sleep(CHUNK_S)
            # the answer's end (the service's turn frames), not only its words
            answered = lambda: any(args.expect in said for said in recorder.ends)  # noqa: E731
            await asyncio.wait_for(recorder.until(answered), args.timeout)
        except Exception as exc:  # reported, and the pipeline still ends
            errors.append(f"talk: {type(exc).__name__}: {exc}")
        await worker.queue_frame(EndFrame())  # the service closes the session

    await asyncio.gather(PipelineRunner(handle_sigint=False).run(worker), talk())
    return {
        "errors": errors,
        "sessions": sessions,
        "delegations": delegations,
        "calls": calls,
        "said": recorder.said,
        "audio_bytes": recorder.audio_bytes,
        "ends": recorder.ends,
        "downstream_transcripts": recorder.downstream_transcripts,
        "context": [m for m in context.get_messages() if isinstance(m, dict)],
        "log": log,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the Live WebSocket URL")
    parser.add_argument("--speech", required=True, help="PCM16 mono 24 kHz, or - for none")
    parser.add_argument("--append", required=True, help="instructions to append once started")
    parser.add_argument("--expect", required=True, help="words the answer must contain")
    parser.add_argument("--question", default="", help="a user message in the context")
    parser.add_argument("--opening", default="", help="a last developer message: speak first")
    parser.add_argument("--backend-url", default="", help="a /v1 base URL to delegate to")
    parser.add_argument("--responses-model", default="", help="server delegation's model")
    parser.add_argument("--out", required=True, help="where to write the JSON result")
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()
    speech = Path(args.speech).read_bytes() if args.speech != "-" else b""
    result = asyncio.run(converse(args, speech))
    Path(args.out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
