"""Request bodies of the OpenAI-compatible HTTP API (pydantic; unknown fields ignored)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from app.llm.backend import MAX_REASONING_TOKENS
from app.llm.tool_calls import ToolSpec, call_text
from app.protocol.session_schema import McpTool

# Every integer a caller sends is bounded here: a huge one (priority 10**400, seed 2**64)
# once got past the edge and failed inside the engine with a 500.
INT32 = (-(2**31), 2**31 - 1)
Seed = Annotated[int | None, Field(default=None, ge=-(2**63), le=2**63 - 1)]
TopK = Annotated[int, Field(default=0, ge=-1, le=INT32[1])]  # <= 0: no top-k filter
Priority = Annotated[int | None, Field(default=None, ge=INT32[0], le=INT32[1])]
ReasoningTokens = Annotated[int | None, Field(default=None, ge=0, le=MAX_REASONING_TOKENS)]

# OpenAI's `reasoning_effort` as an R1 thinking budget in tokens (None: unbounded).
REASONING_EFFORT_TOKENS: dict[str, int | None] = {
    "none": 0,
    "minimal": 0,
    "low": 256,
    "medium": 1024,
    "high": None,
}
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text", "input_text"]
    text: str


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    arguments: str = "{}"


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] | None = None  # an assistant's earlier calls
    tool_call_id: str | None = None  # a tool message: the call it answers

    def text(self) -> str:
        """The message as the model sees it: an assistant's calls in its own tag format."""
        text = self.content if isinstance(self.content, str) else ""
        if isinstance(self.content, list):
            text = "".join(p.text for p in self.content)
        calls = [call_text(c.function.name, c.function.arguments) for c in self.tool_calls or []]
        return "\n".join(t for t in [text, *calls] if t)


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    parameters: dict[str, Any] | None = None


class ToolDef(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["function"] = "function"
    function: FunctionDef


def _tool_kind(value: Any) -> str:
    kind = value.get("type", "function") if isinstance(value, dict) else value.type
    return "mcp" if kind == "mcp" else "function"


# a function, or an MCP server whose tools the server calls itself (app/tools/chat_rounds.py)
AnyTool = Annotated[
    Annotated[ToolDef, Tag("function")] | Annotated[McpTool, Tag("mcp")], Discriminator(_tool_kind)
]


class NamedChoice(BaseModel):
    type: Literal["function"] = "function"
    function: FunctionCall | dict[str, str]

    @property
    def name(self) -> str:
        f = self.function
        return f.name if isinstance(f, FunctionCall) else f.get("name", "")


class StreamOptions(BaseModel):
    include_usage: bool = False


class SamplingRequest(BaseModel):
    """The fields /v1/chat/completions and /v1/completions share."""

    model_config = ConfigDict(extra="ignore")
    model: str
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: TopK = 0
    stop: str | list[str] | None = None
    seed: Seed = None
    n: int = Field(default=1, ge=1, le=128)
    stream: bool = False
    stream_options: StreamOptions | None = None
    priority: Priority = None
    ignore_eos: bool = False  # vLLM's extension: max_tokens tokens whatever EOS (load tests)


class ChatRequest(SamplingRequest):
    messages: list[Message] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: list[AnyTool] | None = None
    tool_choice: Literal["auto", "none", "required"] | NamedChoice | None = None
    max_reasoning_tokens: ReasoningTokens = None  # r1voice extension
    reasoning_effort: ReasoningEffort | None = None
    # Asked for, not given: refused by name (`unsupported`) rather than ignored.
    logprobs: bool | None = None
    top_logprobs: int | None = None
    response_format: dict[str, Any] | None = None

    def unsupported(self) -> tuple[str, str] | None:
        """(field, why) of the first option asked for that r1voice cannot honour."""
        if self.logprobs or self.top_logprobs:
            field = "logprobs" if self.logprobs else "top_logprobs"
            return field, "log probabilities are not returned by r1voice; leave it out"
        kind = (self.response_format or {}).get("type", "text")
        if kind != "text":
            return "response_format", (
                f"response_format '{kind}' is not supported: r1voice does not constrain "
                "decoding to JSON; leave it out (or ask for JSON in the prompt)"
            )
        return None

    @model_validator(mode="after")
    def _choice_among_tools(self) -> ChatRequest:
        """A call asked for must be one the request offers (OpenAI refuses the same)."""
        c = self.tool_choice
        names = [t.function.name for t in self.tools or [] if isinstance(t, ToolDef)]
        if c == "required" and not names and self.mcp_servers():
            return self  # the MCP servers' tools are known once listed
        if (c == "required" or isinstance(c, NamedChoice)) and not names:
            raise ValueError("tool_choice asks for a function call, but 'tools' offers none")
        if isinstance(c, NamedChoice) and c.name not in names:
            raise ValueError(f"tool_choice names '{c.name}', which is not in 'tools' ({names})")
        return self

    def reasoning_budget(self) -> int | None:
        """The thinking budget: `max_reasoning_tokens` if given, else the effort's."""
        if self.max_reasoning_tokens is not None:
            return self.max_reasoning_tokens
        return REASONING_EFFORT_TOKENS[self.reasoning_effort] if self.reasoning_effort else None

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(t.function.name, t.function.description, t.function.parameters)
            for t in self.tools or []
            if isinstance(t, ToolDef)
        ]

    def mcp_servers(self) -> list[McpTool]:
        return [t for t in self.tools or [] if isinstance(t, McpTool)]

    def choice(self) -> str:
        c = self.tool_choice
        return c.name if isinstance(c, NamedChoice) else (c or "auto")
