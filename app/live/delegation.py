"""How the live model delegates: it is offered one function tool, `delegate`, and calls
it when the request needs work beyond a quick spoken reply (reasoning, lookups, tools);
or the server's router delegates a user turn from its transcript (router.py), and the
live model answers meanwhile as it would. Either becomes `session.delegation.created`:
with client delegation the client answers with thinking and commentary appends carrying
the delegation id; with server delegation (`responses`) a second model of this server
works the task out, calling the session's function tools through the client
(backend_task.py), and its conclusion comes back as commentary. A tool call's output
tells the model the task is handed over, and after `acknowledgement_delay_ms` (unless an
append came first) the model says something while the work goes on."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app.live.backend_task import ToolOutputs, work
from app.live.config import ResponsesBackend
from app.live.delegations import Delegations
from app.live.outbox import LiveOutbox
from app.live.router import routed
from app.llm.backend import ChatMessage
from app.llm.catalog import LLMCatalog
from app.protocol import events
from app.protocol.server_events import Wire
from app.protocol.server_events.live import DelegationCreated, ResponseEvent
from app.realtime.session import Session

Send = Callable[[dict[str, Any]], Awaitable[None]]  # a Realtime client event into the session
Say = Callable[[str], Awaitable[None]]  # commentary, spoken at the next natural point
CONTEXT_MESSAGES = 12  # of the conversation, given to the backend model with the task
FAILED = "The backend could not work this out ({}). Tell the user, briefly."
# The backend starts once the live model has answered the turn, or after this long: on a
# CPU both models share the cores, and the voice's first words must not wait on the
# backend's prefill (its conclusion is said after the live answer has played anyway).
LIVE_FIRST_S = 3.0
IDLE_POLL_S = 0.02
log = logging.getLogger("r1voice.live")

DELEGATE = "delegate"
DELEGATE_TOOL: dict[str, Any] = {
    "type": "function",
    "name": DELEGATE,
    "description": (
        "Hand the user's request to the backend when it needs careful reasoning, a lookup "
        "or an action you cannot do yourself. Keep talking with the user meanwhile; the "
        "result comes back to you as a system message."
    ),
    "parameters": {
        "type": "object",
        "properties": {"task": {"type": "string", "description": "The request, in full."}},
        "required": ["task"],
    },
}
HANDED_OVER = (
    "Handed to the backend. Tell the user in a few words that you are looking into it; "
    "do not answer it yourself."
)


class Delegator:
    def __init__(
        self, outbox: LiveOutbox, session: Session, send: Send, say: Say, llms: LLMCatalog
    ) -> None:
        self._outbox, self._session, self._send, self._say = outbox, session, send, say
        self._llms = llms
        self.delegations = Delegations()
        self.ack_delay_ms = 0  # the session's delegation.acknowledgement_delay_ms
        self.backend: ResponsesBackend | None = None  # server delegation's model and prompt
        self.route = "model"  # which turns the server delegates itself (router.py)
        self.active = False  # the session has a delegation configured
        self.tool_outputs = ToolOutputs()  # the client's outputs for the backend's calls
        self._working: set[asyncio.Task[None]] = set()
        self._appends = 0  # thinking and commentary appended: they cancel acknowledgements
        self._acknowledging: asyncio.Task[None] | None = None

    def appended(self) -> None:
        self._appends += 1

    def called(self, item: Wire) -> None:
        """A function call of the live model's (the session's OutputItemDone)."""
        if item.get("name") != DELEGATE:
            return
        try:
            task = str(json.loads(item.get("arguments") or "{}").get("task", ""))
        except (ValueError, AttributeError):
            task = ""
        self._delegate(task)
        self._acknowledging = asyncio.get_running_loop().create_task(self._acknowledge(item))

    def heard(self, transcript: str) -> None:
        """A user turn's transcript: delegated at once when the session delegates and the
        router says so (the live model answers it meanwhile, as it would)."""
        if self.active and routed(self.route, transcript):
            self._delegate(transcript.strip())

    def _delegate(self, task: str) -> None:
        delegation_id = self.delegations.create(task)
        at = self._outbox.timeline.now_ms()
        if self.backend is None:
            self._outbox.emit(
                DelegationCreated(delegation_id=delegation_id, target="client", offset_ms=at)
            )
            return
        response_id = events.new_id("resp")  # the task's first run, named to the client now
        created = DelegationCreated(
            delegation_id=delegation_id, target="responses", offset_ms=at, response_id=response_id
        )
        self._outbox.emit(created)
        job = asyncio.get_running_loop().create_task(
            self._work(self.backend, delegation_id, response_id, task)
        )
        self._working.add(job)
        job.add_done_callback(self._working.discard)

    async def _work(
        self, backend: ResponsesBackend, delegation_id: str, response_id: str, task: str
    ) -> None:
        """Server delegation: the backend model's conclusion, said as commentary."""
        context = [
            ChatMessage(item.role, item.text)
            for item in self._session.conversation.items
            if item.kind == "message" and item.role in ("user", "assistant") and item.text
        ][-CONTEXT_MESSAGES:]
        if context and context[-1].role == "user" and context[-1].content.strip() == task:
            context.pop()  # a routed turn: the task is the user's last words

        def emit(event: dict[str, Any]) -> None:
            self._outbox.emit(ResponseEvent(event=event, delegation_id=delegation_id))

        await self._live_answer_first()
        try:
            said = await work(
                backend,
                self._llms,
                task,
                context,
                delegation_id,
                emit,
                self.tool_outputs,
                response_id,
            )
        except Exception as exc:  # a model that fails to load or answer: the user is told
            log.warning("delegation %s failed: %s", delegation_id, exc)
            emit({"type": "response.failed", "error": {"message": str(exc)}})
            said = FAILED.format(type(exc).__name__)
        if self._outbox.closed or not said:
            return
        self.delegations.finish(delegation_id)
        await self._say(said)

    async def _live_answer_first(self) -> None:
        """Until the session is idle (the live model's answer to the turn generated, no
        new turn under way), at most LIVE_FIRST_S."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIVE_FIRST_S
        await asyncio.sleep(0)  # the turn's own answer starts first
        # Idleness is the turns' and the responses' state together, with no event of its
        # own: a 20 ms poll, for at most LIVE_FIRST_S.
        while not self._session.idle and not self._outbox.closed and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(IDLE_POLL_S)

    def close(self) -> None:
        for task in [*self._working, self._acknowledging]:
            if task is not None:
                task.cancel()

    async def _acknowledge(self, call: Wire) -> None:
        output = {
            "type": "function_call_output",
            "call_id": call.get("call_id"),
            "output": HANDED_OVER,
        }
        await self._send({"type": "conversation.item.create", "item": output})
        appends = self._appends
        await asyncio.sleep(self.ack_delay_ms / 1000)
        while not self._session.idle and not self._outbox.closed:  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # polled: no event says the session became idle
        if self._appends == appends and not self._outbox.closed:  # no append came first
            await self._send({"type": "response.create"})
