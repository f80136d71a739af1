"""Client delegation over the Live WebSocket: the live model calls its `delegate` tool,
the client gets `session.delegation.created`, the model says something while it waits,
and the client's commentary (with the delegation id) is spoken; appends naming an
unknown or finished delegation are refused and the session goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.app.live.conftest import LiveClient, live_connection

pytestmark = pytest.mark.timeout(600)

DELEGATE = ['<tool_call>{"name": "delegate", "arguments": {"task": "Prove it."}}</tool_call>']
WAIT = ["Let me look ", "into that."]
ANSWER = ["The answer ", "is forty-two."]
HARD = [{"role": "user", "content": [{"type": "input_text", "text": "Why 42? Prove it."}]}]


def test_a_delegated_task_is_answered_by_the_clients_commentary(live_server: Any) -> None:
    async def main(address: str) -> LiveClient:
        async with live_connection(address) as client:
            await client.start(input=HARD, delegation={"type": "client"})
            created = await client.wait("session.delegation.created")
            delegation_id = created["delegation"]["id"]
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "that" in e["delta"]
            )
            append = {"delegation_id": delegation_id, "event_id": "t1"}
            think = {"type": "session.thinking.append", "content": "6 times 7.", **append}
            await client.send(think)
            await client.wait("session.thinking.appended")
            speak = {"type": "session.commentary.append", "content": "It is 42.", "event_id": "c1"}
            await client.send({**speak, "delegation_id": delegation_id})
            await client.wait("session.commentary.appended")
            await client.wait(
                "session.output_transcript.delta", match=lambda e: "two" in e["delta"]
            )
            await client.send({**speak, "delegation_id": delegation_id, "event_id": "c2"})
            await client.wait("error")
            await client.send({**speak, "delegation_id": "deleg_unknown", "event_id": "c3"})
            await client.wait("error", match=lambda e: e["client_event_id"] == "c3")
            await client.send({"type": "session.close"})
            await client.closed()
            return client

    with live_server(DELEGATE, WAIT, ANSWER) as address:
        client = asyncio.run(main(address))
    types = client.types()
    assert types.index("session.delegation.created") < types.index("session.thinking.appended")
    (created,) = client.of("session.delegation.created")
    assert created["delegation"]["target"] == "client"
    assert created["delegation"]["type"] == "delegation"
    assert created["offset_ms"] >= 0
    assert client.said() == "".join(WAIT + ANSWER)  # the tool call itself is never spoken
    errors = {e["client_event_id"]: e["error"] for e in client.of("error")}
    assert set(errors) == {"c2", "c3"}
    assert (errors["c2"]["code"], errors["c2"]["param"]) == ("delegation_finished", "delegation_id")
    assert errors["c3"]["code"] == "delegation_not_found"
    assert types[-1] == "session.closed"
