"""The responses of one session: at most one active, recent ones kept for truncation.

This is the narrow interface the turn coordinator and the session use to start, cancel
and look up answers; a response reports its end back through a callback, so nothing
here holds a pointer to its owner.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable

from app.llm import GenerationParams, LLMBackend, LLMBackendError
from app.llm.tool_calls import ToolSpec
from app.protocol.client_events import ResponseOptions
from app.protocol.errors import ProtocolError
from app.protocol.session_schema import McpTool, Tool
from app.realtime.handoff import TurnTiming
from app.realtime.responses.generation import prompt_history
from app.realtime.responses.response import Response
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome, ResponseSpec
from app.realtime.session_config import SessionConfig
from app.tools.acknowledgements import cancelled_note, cancels

log = logging.getLogger("r1voice.response")
RECENT_RESPONSES = 64  # answers that can still be truncated
RESULT_RETRY_S = 0.25  # a tool's result waiting for the user to finish: looked at again


class Responses:
    def __init__(
        self,
        config: SessionConfig,
        deps: ResponseDeps,
        on_outcome: Callable[[ResponseOutcome], None] = lambda _outcome: None,
    ) -> None:
        self._config = config
        self._deps = dataclasses.replace(deps, on_tool_result=self._tool_result)
        self._on_outcome = on_outcome
        self._results: list[str] = []  # notes of tool results waiting for a free turn
        # whether the user is between turns (the session's turns say): a result waits
        # for the end of a sentence being spoken
        self.user_idle: Callable[[], bool] = lambda: True
        self.active: Response | None = None
        self._recent: OrderedDict[str, Response] = OrderedDict()  # item id -> response
        self._closed = False
        self._priming: asyncio.Task[None] | None = None  # see prime

    @property
    def responding(self) -> bool:
        return self.active is not None

    def start(
        self,
        options: ResponseOptions | None = None,
        timing: TurnTiming | None = None,
        early_user_text: str | None = None,
        early_language: str | None = None,
        idle_ms: int | None = None,
        event_id: str | None = None,
        note: str | None = None,
        say: str | None = None,
    ) -> Response | None:
        """Start an answer; None once the session is closing. Refused while one runs.
        `early_user_text`: a turn still being spoken, heard in `early_language`;
        `idle_ms`: an idle nudge, the user has said nothing for that long;
        `event_id`: the client's `response.create`, if it asked; `say`: words said as
        they are, written by no model."""
        if self._closed:
            return None
        if early_user_text is not None and self._spec(None, None).mcp_servers:
            return None  # an early answer may be discarded; an MCP call it made may not
        if self.active is not None:
            raise ProtocolError(
                "conversation_already_has_active_response",
                f"response {self.active.id} is still in progress; cancel it first or wait "
                "for response.done",
            )
        self._stop_priming()
        spec = self._spec(options, early_user_text, early_language, idle_ms, event_id)
        note = note or self._cancelled(early_user_text, idle_ms)
        if note is not None:
            spec = dataclasses.replace(spec, note=note)
        if say is not None:
            spec = dataclasses.replace(spec, say=say)
        response = Response(spec, self._deps, timing, self._ended)
        self.active = response
        self._recent[response.item_id] = response
        while len(self._recent) > RECENT_RESPONSES:
            self._recent.popitem(last=False)
        response.start()
        return response

    def prime(self, user_text: str, language: str | None) -> None:
        """The user is still saying `user_text` (a partial transcript, heard in `language`):
        have the LLM compute the answer's prompt with those words now, while it waits for
        the turn to end, so that the answer's prefill at the end is only what the final
        words change (the prefix cache keeps the rest). One at a time; none while an
        answer runs, for MCP tools (listed only when the answer starts) or once closed."""
        busy = self._priming is not None and not self._priming.done()
        if not self._deps.llm.primes or self._closed or self.active is not None or busy:
            return
        if not user_text.strip():
            return
        spec = self._spec(None, user_text, language)
        if spec.mcp_servers:
            return
        self._priming = asyncio.create_task(self._prime(spec), name="llm-prime")

    async def _prime(self, spec: ResponseSpec) -> None:
        offered = list(spec.tools) if spec.tool_choice != "none" else []
        try:
            history = await prompt_history(spec, self._deps, offered, spec.tool_choice, drop=False)
            if not history.dropped:  # else the answer's own cut decides its prompt
                await self._deps.llm.prime(history.messages, spec.params)
        except LLMBackendError as exc:  # busy, or too long: the answer computes it
            log.debug("no prime: %s", exc)
        except Exception:  # best effort: the answer computes its prompt itself
            log.exception("priming the LLM failed")

    def _stop_priming(self) -> None:
        """An answer starts (or the session ends): a prime still queued or running would
        only compute beside it what it computes itself (what the prime has computed
        stays cached)."""
        if self._priming is not None:
            self._priming.cancel()
            self._priming = None

    async def create(self, options: ResponseOptions | None, event_id: str | None) -> None:
        """`response.create`: an early answer still held (the client never saw it) gives way
        to it, as if the client's came first; a response the client sees refuses it."""
        if self.active is not None and self.active.held:
            await self.active.discard()
        self.start(options, event_id=event_id)

    async def cancel(self) -> None:
        """`response.cancel`: refused when nothing runs that the client sees (the spec's
        error code); a held early answer is the server's own business."""
        if self.active is None or self.active.held:
            raise ProtocolError("response_cancel_not_active", "there is no response to cancel")
        await self.active.cancel("client_cancelled")

    async def interrupt(self, reason: str) -> None:
        """Cancel the active answer, if any (barge-in, a continued turn)."""
        if self.active is not None:
            await self.active.cancel(reason)

    def pause(self) -> Response | None:
        """Pause the active answer's audio (speech over it); the answer paused, if any."""
        active = self.active
        if active is None or active.done:
            return None
        active.pause()
        return active

    def resume(self) -> None:
        """Resume the paused answer, if it still runs."""
        if self.active is not None:
            self.active.resume()

    def use_llm(self, llm: LLMBackend) -> None:
        """Answer with `llm` from the next response on (a running one keeps its own)."""
        if llm is not self._deps.llm:
            self._deps = dataclasses.replace(self._deps, llm=llm)

    def recent(self, item_id: str) -> Response | None:
        return self._recent.get(item_id)

    async def close(self, reason: str = "client_cancelled") -> None:
        """No answer starts from now on; the active one is cancelled with `reason`."""
        self._closed = True
        self._stop_priming()
        await self.interrupt(reason)
        if self._deps.mcp is not None:
            await self._deps.mcp.close()

    def tools_changed(self) -> None:
        """The session's tools were set: list its MCP servers' tools now, as OpenAI does."""
        if self._deps.mcp is not None:
            self._deps.mcp.prepare([t for t in self._config.tools if isinstance(t, McpTool)])

    def _ended(self, response: Response, outcome: ResponseOutcome) -> None:
        if self.active is response:
            self.active = None
        if not outcome.visible:
            self._recent.pop(response.item_id, None)
        self._on_outcome(outcome)
        if self._results:  # after whatever the outcome starts itself
            asyncio.get_running_loop().call_soon(self._answer_result)

    def _cancelled(self, early_user_text: str | None, idle_ms: int | None) -> str | None:
        """The user's turn said "never mind" while calls ran in the background: they
        are cancelled, and the answer says so."""
        last = self._deps.conversation.items[-1] if self._deps.conversation.items else None
        if self._deps.mcp is None or early_user_text or idle_ms is not None or last is None:
            return None
        if last.role != "user" or not cancels(last.text or ""):
            return None
        names = self._deps.mcp.cancel_background()
        self._results.clear()  # a result that came meanwhile is not answered either
        return cancelled_note(names) if names else None

    def _tool_result(self, note: str) -> None:
        """A tool call that went on in the background is done: answer with its result
        now, or after the answer running (the user's turn first)."""
        self._results.append(note)
        self._answer_result()

    def _answer_result(self) -> None:
        if self._closed or self.active is not None or not self._results:
            return  # an answer running: tried again when it ends
        if not self.user_idle():  # mid-sentence: at the next pause
            asyncio.get_running_loop().call_later(RESULT_RETRY_S, self._answer_result)
            return
        note = self._results.pop(0)
        self.start(note=note)

    def _spec(
        self,
        options: ResponseOptions | None,
        early_user_text: str | None,
        early_language: str | None = None,
        idle_ms: int | None = None,
        event_id: str | None = None,
    ) -> ResponseSpec:
        cfg = self._config
        opts = options or ResponseOptions()
        modalities = opts.output_modalities or opts.modalities or cfg.modalities
        limit = opts.max_output_tokens or opts.max_response_output_tokens
        tools = cfg.tools if opts.tools is None else opts.tools
        choice = opts.tool_choice or cfg.tool_choice
        return ResponseSpec(
            audio="audio" in modalities,
            instructions=opts.instructions or cfg.instructions,
            params=GenerationParams(
                max_tokens=limit if isinstance(limit, int) else cfg.max_output_tokens,
                temperature=cfg.temperature if opts.temperature is None else opts.temperature,
                priority=cfg.priority,
                max_reasoning_tokens=cfg.max_reasoning_tokens,
            ),
            voice=cfg.voice,
            speed=cfg.speed,
            output_format=cfg.output_format,
            early_user_text=early_user_text,
            early_language=early_language,
            idle_ms=idle_ms,
            in_conversation=opts.conversation != "none",
            metadata=opts.metadata,
            tools=tuple(
                ToolSpec(t.name, t.description, t.parameters) for t in tools if isinstance(t, Tool)
            ),
            mcp_servers=tuple(t for t in tools if isinstance(t, McpTool)),
            tool_choice=choice if isinstance(choice, str) else choice.name,
            language=cfg.transcription_language,
            event_id=event_id,
        )
