"""An API body sent without saying it is JSON (no Content-Type, or curl -d's form type) is
read as the JSON it is: Triton's curl lines and many READMEs leave the header out, and the
routes then refused the body as "not a valid dictionary", naming nothing."""

from __future__ import annotations

from app.server.access import ASGIApp, Receive, Scope, Send

JSON = b"application/json"
UNSAID = (b"", b"application/x-www-form-urlencoded")  # no type; curl -d's default
API = ("/v1/", "/v2/")
NOT_JSON = ("/v1/realtime/calls",)  # an SDP offer (application/sdp or a multipart form)


class JsonByDefault:
    """ASGI middleware: an API request's unsaid body type becomes application/json."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] == "http"
            and scope["method"] in ("POST", "PUT", "PATCH")
            and path.startswith(API)
            and not path.startswith(NOT_JSON)
        ):
            headers = scope["headers"]
            said = next((v for k, v in headers if k == b"content-type"), b"")
            if said.split(b";")[0].strip().lower() in UNSAID:
                rest = [(k, v) for k, v in headers if k != b"content-type"]
                scope = {**scope, "headers": [*rest, (b"content-type", JSON)]}
        await self.app(scope, receive, send)
