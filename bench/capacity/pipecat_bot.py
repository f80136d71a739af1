"""The voice stack a user would build instead of r1voice, for `bench capacity --peer
pipecat`: a Pipecat pipeline on the same models, one per WebSocket connection, as
Pipecat's own examples serve users (Silero VAD, Smart Turn v3 to end turns,
faster-whisper, an OpenAI-compatible LLM, Piper).

It runs in its own virtual environment (`make bench-pipecat` builds `.venv-pipecat` with
pip's `pipecat-ai[websocket,whisper,piper]`), started by the benchmark:

    .venv-pipecat/bin/python bench/capacity/pipecat_bot.py --port P --llm-url URL --llm-model NAME
        --whisper DIR --piper-voice FILE.onnx --instructions TEXT

Nothing here imports r1voice: the peer shares only the model files. The client speaks
Pipecat's protobuf frames (bench/voice/pipecat_connection.py); the RTVI messages Pipecat
sends by default (speaking started/stopped, transcripts) mark the turns.
"""

# No `from __future__ import annotations`: FastAPI reads the WebSocket parameter's
# annotation at runtime, and a string naming a local import reads as a query parameter.
import argparse
from pathlib import Path
from typing import Any


def pipeline_task(websocket: Any, args: argparse.Namespace) -> Any:
    """One session's pipeline: transport in -> STT -> user turn -> LLM -> TTS -> out."""
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.task import PipelineParams, PipelineTask
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.serializers.protobuf import ProtobufFrameSerializer
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.services.piper.tts import PiperTTSService
    from pipecat.services.whisper.stt import WhisperSTTService
    from pipecat.transcriptions.language import Language
    from pipecat.transports.websocket.fastapi import (
        FastAPIWebsocketParams,
        FastAPIWebsocketTransport,
    )

    transport = FastAPIWebsocketTransport(
        websocket,
        FastAPIWebsocketParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            add_wav_header=False,
            serializer=ProtobufFrameSerializer(),
        ),
    )
    # r1voice's ASR settings: int8 on the CPU, English (whisper-tiny.en)
    stt = WhisperSTTService(
        device="cpu",
        compute_type="int8",
        settings=WhisperSTTService.Settings(model=args.whisper, language=Language.EN),
    )
    llm = OpenAILLMService(
        api_key="none",
        base_url=args.llm_url,
        settings=OpenAILLMService.Settings(model=args.llm_model, max_tokens=args.max_tokens),
    )
    voice = Path(args.piper_voice)
    tts = PiperTTSService(
        download_dir=voice.parent, settings=PiperTTSService.Settings(voice=voice.stem)
    )
    context = LLMContext(messages=[{"role": "system", "content": args.instructions}])
    # Smart Turn v3 ends the user's turns: Pipecat's default stop strategy. A turn with no
    # transcript goes unanswered: by default Pipecat answers one heard before the bot's
    # first answer with a `developer` message, which llama-cpp-python's server refuses
    # (500, "Input should be 'user'"), and every later request of that session carried
    # it: 238 refused requests, the sessions' turns all failed, at 4-8 sessions.
    turns = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer(), empty_user_turn=None),
    )
    pipeline = Pipeline(
        [transport.input(), stt, turns.user(), llm, tts, transport.output(), turns.assistant()]
    )
    task = PipelineTask(
        pipeline, params=PipelineParams(audio_in_sample_rate=16_000, audio_out_sample_rate=24_000)
    )

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(_transport: Any, _client: Any) -> None:
        await task.cancel()

    return task


def app(args: argparse.Namespace) -> Any:
    from fastapi import FastAPI, WebSocket
    from pipecat.pipeline.runner import PipelineRunner

    api = FastAPI()

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @api.websocket("/ws")
    async def session(websocket: WebSocket) -> None:
        await websocket.accept()
        task = pipeline_task(websocket, args)
        await PipelineRunner(handle_sigint=False).run(task)

    return api


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--llm-url", required=True, help="an OpenAI-compatible /v1 base URL")
    parser.add_argument("--llm-model", required=True)
    parser.add_argument("--whisper", required=True, help="a faster-whisper model directory")
    parser.add_argument("--piper-voice", required=True, help="a Piper voice's .onnx file")
    parser.add_argument("--instructions", required=True, help="the system prompt")
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    uvicorn.run(app(args), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
