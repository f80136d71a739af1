"""The stdio transport of an MCP server the operator named: the process is started in a
session (process group) of its own, spoken to over its stdin and stdout, and its whole
group is killed when the transport is left, however it is left.

The `mcp` SDK's own stdio client stops its server with awaits (close stdin, wait, kill);
a task cancelled natively in the middle (an event loop shutting down cancels every task)
left the server running and the loop waiting on its stdout forever. Here the last step is
a kill that needs no await."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Sequence

import anyio
import mcp_types
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

GRACE_S = 2.0  # for the server to exit on its own once its stdin is closed


def _parse(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # the session surfaces it as the request's failure
        return exc


def _kill(process: Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # its children too (npx, uv run...)
    # asyncio's transport of the process, closed now: left to the garbage collector, it
    # closes after its loop has (a warning, "Event loop is closed")
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if transport is not None:
        transport.close()


@contextlib.asynccontextmanager
async def stdio_transport(command: Sequence[str]) -> AsyncIterator[TransportStreams]:
    process = await anyio.open_process(
        list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)

        async def read() -> None:
            assert process.stdout is not None
            buffer = ""
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async with to_session:
                    async for chunk in TextReceiveStream(process.stdout):
                        *lines, buffer = (buffer + chunk).split("\n")
                        for line in lines:
                            if line.strip():
                                await to_session.send(_parse(line))

        async def write() -> None:
            assert process.stdin is not None
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async with from_session:
                    async for message in from_session:
                        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send((text + "\n").encode())

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            try:
                yield read_stream, write_stream
            finally:
                tasks.cancel_scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(GRACE_S):
                    if process.stdin is not None:
                        await process.stdin.aclose()
                    await process.wait()
    finally:
        _kill(process)
