"""Server delegation (`delegation.type: "responses"`): the task the live model delegates
runs on a second model of this server (`delegation.responses.model`, any LLM the server
offers, e.g. the bundled qwen2.5-coder-1.5b-instruct or an R1-style reasoning model). Its
thinking (`<think>`) is dropped, never spoken; its conclusion comes back to the live
model as commentary, spoken at the next natural point."""

from __future__ import annotations

from app.live.config import ResponsesBackend
from app.llm import LLMBackend
from app.llm.backend import ChatMessage, GenerationParams
from app.llm.catalog import LLMCatalog
from app.llm.reasoning import ThinkSplitter
from app.protocol import events
from app.protocol.errors import ProtocolError

INSTRUCTIONS = (
    "You work out answers for a voice assistant, which will say your conclusion to the "
    "user. Reply with the conclusion only, in two short spoken sentences at most."
)
# A reasoning model's thinking budget by `reasoning.effort` (tokens inside <think>).
REASONING_TOKENS = {"none": 0, "minimal": 64, "low": 256, "medium": 1024, "high": 4096}
MAX_OUTPUT_TOKENS = 256


def check_model(config: ResponsesBackend, llms: LLMCatalog, event_id: str | None) -> None:
    if config.model not in llms.names():
        raise ProtocolError(
            "invalid_value",
            f"delegation.responses.model {config.model!r} is not a model of this server; "
            f"choose one of: {', '.join(llms.names())}",
            param="session.delegation.responses.model",
            event_id=event_id,
        )


async def conclude(
    config: ResponsesBackend, llms: LLMCatalog, task: str, context: list[ChatMessage]
) -> str:
    """The backend model's conclusion on `task` (the conversation so far as `context`)."""
    llm: LLMBackend = await llms.load(config.model)
    messages = [
        ChatMessage("system", config.instructions or INSTRUCTIONS),
        *context,
        ChatMessage("user", task),
    ]
    effort = (config.reasoning or {}).get("effort", "low")
    params = GenerationParams(
        max_tokens=config.max_output_tokens or MAX_OUTPUT_TOKENS,
        max_reasoning_tokens=REASONING_TOKENS.get(str(effort), REASONING_TOKENS["low"]),
    )
    splitter = ThinkSplitter(llm.prompt_opens_reasoning(messages))
    said: list[str] = []
    async for delta in llm.stream_chat(messages, params, events.new_id("deleg_req")):
        pieces = splitter.push(delta.text) if delta.text else []
        said += [text for kind, text in pieces if kind == "content"]
    said += [text for kind, text in splitter.flush() if kind == "content"]
    return "".join(said).strip()
