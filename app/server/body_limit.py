"""An HTTP request body larger than `max_body_bytes` is refused with 413 before any route
parses it (a 50 MB body once held 4 GB of memory for 30 s before its 400)."""

from __future__ import annotations

import json

from app.server.access import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """ASGI middleware: reads at most `max_bytes` of a body, then replays it to the app."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, int(declared))
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._refuse(send, size)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, size: int) -> None:
        message = (
            f"the request body is {'over ' if size > self.max_bytes else ''}{size} bytes; "
            f"the limit is {self.max_bytes} (R1VOICE_MAX_BODY_BYTES)"
        )
        error = {"message": message, "type": "invalid_request_error", "code": "body_too_large"}
        body = json.dumps({"error": {**error, "param": None}}).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
