"""How the live model delegates: it is offered one function tool, `delegate`, and calls
it when the request needs work beyond a quick spoken reply (reasoning, lookups, tools).
The call becomes `session.delegation.created` to the client (target `client`), which
answers with thinking and commentary appends carrying the delegation id. The call's
output tells the model the task is handed over, and after `acknowledgement_delay_ms`
(unless an append came first) the model says something while the work goes on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from app.live.delegations import Delegations
from app.live.outbox import LiveOutbox
from app.protocol.server_events import Wire
from app.protocol.server_events.live import DelegationCreated
from app.realtime.session import Session

Send = Callable[[dict[str, Any]], Awaitable[None]]  # a Realtime client event into the session

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
    def __init__(self, outbox: LiveOutbox, session: Session, send: Send) -> None:
        self._outbox, self._session, self._send = outbox, session, send
        self.delegations = Delegations()
        self.ack_delay_ms = 0  # the session's delegation.acknowledgement_delay_ms
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
        delegation_id = self.delegations.create(task)
        at = self._outbox.timeline.now_ms()
        created = DelegationCreated(delegation_id=delegation_id, target="client", offset_ms=at)
        self._outbox.emit(created)
        loop = asyncio.get_running_loop()
        self._acknowledging = loop.create_task(self._acknowledge(item))

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
