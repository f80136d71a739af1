"""`POST /v1/realtime/calls`: a Realtime session over WebRTC, as OpenAI's GA API has it.

The body is the browser's SDP offer (`Content-Type: application/sdp`), or a multipart
form with `sdp` and an optional `session` (the object `session.update` carries, applied
before any other event). The answer is `201` with the SDP answer and a `Location` naming
the call; `POST /v1/realtime/calls/{call_id}/hangup` ends it. "Call" is the API's word
for it; inside, the WebRTC side is a `Peer` (webrtc/peer.py, webrtc/peers.py), and "call"
means a function call. Access is as for the WebSocket: the API key, or a client secret
from /v1/realtime/client_secrets. The session is the WebSocket's (one implementation, two
transports: session_runner.py), in the GA dialect; only the audio travels differently.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response

from app.protocol import events
from app.protocol.dialect import GA
from app.realtime.session import Session
from app.server.refusal import Refusal
from app.server.routes.openai_common import OpenAIError
from app.server.session_runner import SessionRunner, create_session
from app.server.state import HttpState, ServerState
from app.server.webrtc.offer import Offer, OfferError

if TYPE_CHECKING:  # aiortc is imported where a call first needs it
    from app.server.webrtc.peer import Peer

log = logging.getLogger("r1voice.webrtc")
router = APIRouter(prefix="/v1/realtime", tags=["realtime"])


async def _read_offer(request: Request) -> tuple[Offer, dict[str, Any] | None]:
    """The offer and the optional session object, from either body the GA API takes."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    session: dict[str, Any] | None = None
    if kind == "multipart/form-data":
        form = await request.form()
        given = form.get("sdp")
        raw = given if isinstance(given, str) else (await given.read() if given else b"")
        if form.get("session") is not None:
            session = _session_object(form.get("session"))
    elif kind in ("application/sdp", "text/plain", ""):
        raw = await request.body()
    else:
        raise OpenAIError(
            415,
            f"unsupported Content-Type {kind!r}: send the SDP offer as application/sdp, or "
            "multipart/form-data with `sdp` (and optionally `session`)",
            code="unsupported_content_type",
        )
    try:
        sdp = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        return Offer.parse(sdp), session
    except UnicodeDecodeError:
        raise OpenAIError(400, "the SDP offer is not UTF-8 text", code="invalid_offer") from None
    except OfferError as exc:
        raise OpenAIError(400, exc.message, code=exc.code, param="sdp") from None


def _session_object(given: Any) -> dict[str, Any]:
    text = given if isinstance(given, str) else ""
    try:
        session = json.loads(text)
    except json.JSONDecodeError:
        session = None
    if not isinstance(session, dict):
        raise OpenAIError(
            400,
            "the form's `session` must be a JSON object (what session.update carries)",
            code="invalid_session",
            param="session",
        )
    return session


async def _run(state: ServerState, session: Session, peer: Peer) -> None:
    """The peer's life: its session, then everything it held freed."""
    state.admitting -= 1  # the session counts from here on (in state.sessions)
    try:
        await SessionRunner(state, session, peer, "webrtc").run()
    finally:
        await peer.shutdown()


@router.post("/calls", status_code=201, response_class=Response)
async def create_call(request: Request, state: HttpState) -> Response:
    # aiortc: imported at the first call, on a thread (never on the loop other sessions use)
    Peer = (await asyncio.to_thread(importlib.import_module, "app.server.webrtc.peer")).Peer
    offer, session_object = await _read_offer(request)
    refusal = Refusal.of(state)
    if refusal is not None:
        raise OpenAIError(
            refusal.http_status, refusal.message, code=refusal.code, headers={"Retry-After": "1"}
        )
    client = request.client.host if request.client else "unknown"
    limit = state.settings.client_max_sessions
    if limit and state.peers.of_client(client) >= limit:  # as ClientRates does for sockets
        raise OpenAIError(
            429,
            f"{client} has {limit} WebRTC calls open (R1VOICE_CLIENT_MAX_SESSIONS); "
            "hang one up first",
            code="rate_limited",
            headers={"Retry-After": "1"},
        )
    state.admitting += 1  # counted before the first await: no race past max_sessions
    peer = Peer(events.new_id("rtc"), state.settings.ice_server_list())
    started = False
    try:
        answer = await peer.answer(offer)
        if await request.is_disconnected():  # the peer left while ICE gathered
            log.info("call %s: the client left before its answer", peer.id)
            return Response(status_code=499)
        extensions = request.query_params.get("r1voice_events", "") in ("1", "true")
        session = create_session(state, GA, extensions, playback=peer.track)
        if session_object is not None:
            peer.preface(json.dumps({"type": "session.update", "session": session_object}))
        peer.watch_connect(state.settings.webrtc_connect_timeout_s)
        state.peers.start(peer.id, _run(state, session, peer), peer.hang_up, client)
        started = True
    except OfferError as exc:
        raise OpenAIError(400, exc.message, code=exc.code, param="sdp") from None
    finally:
        if not started:
            state.admitting -= 1
            await peer.shutdown()
    location = f"/v1/realtime/calls/{peer.id}"
    return Response(answer, 201, {"Location": location}, media_type="application/sdp")


@router.post("/calls/{call_id}/hangup")
async def hang_up(call_id: str, state: HttpState) -> dict[str, Any]:
    if not await state.peers.hang_up(call_id):
        raise OpenAIError(
            404, f"no open call {call_id!r} (it ended, or never was)", code="call_not_found"
        )
    return {}
