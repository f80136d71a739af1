"""`POST /v1/realtime/client_secrets`: OpenAI's GA endpoint for short-lived Realtime keys.

A backend holding the API key mints a secret for a browser, which then connects to
/v1/realtime with it (the subprotocol `openai-insecure-api-key.<secret>`) without ever
seeing the key. A secret opens Realtime connections only, until it expires. The request
needs the API key itself (the access guard checks it like any other route).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from app.server.state import HttpState
from app.server.tenants import DEFAULT, tenant_of

router = APIRouter(prefix="/v1/realtime", tags=["realtime"])


class ExpiresAfter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    anchor: Literal["created_at"] = "created_at"
    seconds: int = Field(ge=10, le=7200)  # OpenAI's bounds


class ClientSecretRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    expires_after: ExpiresAfter | None = None
    session: dict[str, Any] | None = None  # echoed; send it as session.update once connected


@router.post("/client_secrets")
async def client_secrets(
    state: HttpState, http: Request, request: ClientSecretRequest | None = None
) -> dict[str, Any]:
    request = request or ClientSecretRequest()
    seconds = (
        request.expires_after.seconds
        if request.expires_after
        else state.settings.client_secret_ttl_s
    )
    # the secret opens sessions of its minting key's tenant
    value, expires_at = state.client_secrets.mint(seconds, tenant_of(http.scope) or DEFAULT)
    session = {"type": "realtime", **(request.session or {})}
    return {"value": value, "expires_at": expires_at, "session": session}
