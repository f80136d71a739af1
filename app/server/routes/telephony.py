"""Phone calls: Twilio's voice webhook answers with TwiML that connects the call to our
media stream WebSocket, which drives a Realtime session (app/telephony/, docs/telephony.md).

Twilio's and Telnyx's servers hold no key of ours: with an API key set, Twilio's webhook
must carry a valid `X-Twilio-Signature` (R1VOICE_TWILIO_AUTH_TOKEN), Telnyx's TeXML
webhook a valid, fresh `telnyx-signature-ed25519` (R1VOICE_TELNYX_PUBLIC_KEY), and the
stream URL they answer holds a single-use token that expires in a minute
(app/telephony/signature.py, telnyx_signature.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request, Response, WebSocket
from starlette.datastructures import State

from app.protocol.dialect import GA
from app.server.refusal import Refusal
from app.server.routes.openai_common import OpenAIError
from app.server.session_runner import SessionRunner, create_session
from app.server.state import HttpState, WsState
from app.settings import Settings
from app.telephony import twiml
from app.telephony.signature import StreamTokens, WebhookGuard
from app.telephony.telnyx_signature import TelnyxGuard
from app.telephony.twilio_messages import StreamError
from app.telephony.twilio_playback import TwilioPlayback
from app.telephony.twilio_stream import TwilioStream, close_code, close_reason, read_start

log = logging.getLogger("r1voice.telephony")
router = APIRouter(prefix="/v1/telephony", tags=["telephony"])

STREAM_PATH = "/v1/telephony/twilio/stream"
START_TIMEOUT_S = 10.0  # Twilio sends `connected` and `start` at once
PASSED_ON = ("CallSid", "From", "To")  # the webhook's fields the stream's `start` carries
# TeXML's <Stream>: Telnyx sends the call and takes our audio back over it, as PCMU
TELNYX_STREAM = {"bidirectionalMode": "rtp", "bidirectionalCodec": "PCMU"}


@dataclass
class _Checks:
    webhooks: WebhookGuard | None  # None: no API key, every caller is welcome
    tokens: StreamTokens | None
    telnyx: TelnyxGuard | str | None  # a str: why R1VOICE_TELNYX_PUBLIC_KEY is unusable


def _checks(app_state: State, settings: Settings) -> _Checks:
    checks = getattr(app_state, "telephony_checks", None)
    if checks is None:
        key, token = settings.api_key, settings.twilio_auth_token
        telnyx: TelnyxGuard | str | None = None
        if key and settings.telnyx_public_key:
            try:
                telnyx = TelnyxGuard(settings.telnyx_public_key)
            except ValueError as exc:
                telnyx = str(exc)
        checks = _Checks(
            WebhookGuard(token) if key and token else None,
            StreamTokens(key) if key else None,
            telnyx,
        )
        app_state.telephony_checks = checks
    return checks


def _base_url(request: Request, settings: Settings) -> str:
    """Where callers' providers reach us: the configured public URL, or this request's
    host and scheme (a tunnel's, when it says them)."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    scheme = request.headers.get("x-forwarded-proto", request.url.scheme)
    host = request.headers.get("x-forwarded-host", request.headers.get("host", ""))
    return f"{scheme}://{host}"


def _say(text: str) -> Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?><Response><Say>{text}</Say><Hangup/></Response>'
    return Response(body, media_type="application/xml")


@router.post("/twilio/voice")
async def twilio_voice(request: Request, state: HttpState) -> Response:
    """Twilio's voice webhook (form-encoded CallSid, From, To, ...): TwiML that streams the
    call to us."""
    body = await request.body()
    params = dict(parse_qsl(body.decode("utf-8", "replace"), True))
    base = _base_url(request, state.settings)
    checks = _checks(request.app.state, state.settings)
    if checks.tokens is not None:
        if checks.webhooks is None:
            raise _missing("Twilio", "R1VOICE_TWILIO_AUTH_TOKEN", "auth token", "twilio")
        query = f"?{request.url.query}" if request.url.query else ""
        signature = request.headers.get("x-twilio-signature", "")
        refusal = checks.webhooks.refusal(base + request.url.path + query, params, signature)
        if refusal is not None:
            log.info("twilio webhook refused: %s", refusal)
            raise OpenAIError(403, refusal, code="invalid_twilio_signature")
    return _connect(state, base, checks, params, None)


@router.post("/telnyx/voice")
async def telnyx_voice(request: Request, state: HttpState) -> Response:
    """Telnyx's TeXML webhook (form-encoded CallSid, From, To, ...): TeXML that streams the
    call to us both ways (bidirectional RTP, PCMU)."""
    body = await request.body()
    params = dict(parse_qsl(body.decode("utf-8", "replace"), True))
    checks = _checks(request.app.state, state.settings)
    if checks.tokens is not None:
        if checks.telnyx is None:
            raise _missing("Telnyx", "R1VOICE_TELNYX_PUBLIC_KEY", "public key", "telnyx")
        if isinstance(checks.telnyx, str):
            raise OpenAIError(500, checks.telnyx, code="telnyx_public_key_invalid")
        headers = request.headers
        refusal = checks.telnyx.refusal(
            body, headers.get("telnyx-signature-ed25519", ""), headers.get("telnyx-timestamp", "")
        )
        if refusal is not None:
            log.info("telnyx webhook refused: %s", refusal)
            raise OpenAIError(403, refusal, code="invalid_telnyx_signature")
    base = _base_url(request, state.settings)
    return _connect(state, base, checks, params, TELNYX_STREAM)


def _missing(provider: str, setting: str, what: str, code: str) -> OpenAIError:
    return OpenAIError(
        403,
        f"the server has an API key, so {provider}'s webhooks must be signed: set {setting} "
        f"to the {provider} account's {what}",
        code=f"{code}_{what.replace(' ', '_')}_missing",
    )


def _connect(
    state: HttpState,
    base: str,
    checks: _Checks,
    params: dict[str, str],
    attributes: dict[str, str] | None,
) -> Response:
    """The webhook's answer: the stream URL (with a token when a key is set) and the
    fields the stream's session needs, or a spoken refusal when no session can start."""
    path = STREAM_PATH if checks.tokens is None else f"{STREAM_PATH}/{checks.tokens.mint()}"
    if Refusal.of(state) is not None:
        return _say("The assistant cannot take your call right now. Please call again shortly.")
    passed = {name: params[name] for name in PASSED_ON if name in params}
    body = twiml.connect_stream(twiml.stream_url(base, path), passed, attributes)
    return Response(body, media_type="application/xml")


@router.websocket("/twilio/stream")
async def twilio_stream_open(websocket: WebSocket, state: WsState) -> None:
    await _stream(websocket, state, None)


@router.websocket("/twilio/stream/{token}")
async def twilio_stream(websocket: WebSocket, state: WsState, token: str) -> None:
    await _stream(websocket, state, token)


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(websocket.close(code=code, reason=reason), timeout=2)


async def _stream(websocket: WebSocket, state: WsState, token: str | None) -> None:
    """A call's media stream: its `start`, then a session until `stop` or a hang-up."""
    await websocket.accept()
    tokens = _checks(websocket.app.state, state.settings).tokens
    if tokens is not None:
        why = tokens.refusal(token) if token is not None else "the stream URL has no token"
        if why is not None:
            state.metrics.record_transport_error("twilio", "invalid_token")
            await _close(websocket, 1008, why + "; use the URL the voice webhook answered")
            return
    refusal = Refusal.of(state)
    if refusal is not None:
        await _close(websocket, refusal.ws_code, refusal.message)
        return

    async def receive() -> str | bytes | None:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return None
        return message.get("text") or message.get("bytes") or b""

    async def close(code: int, reason: str) -> None:
        await _close(websocket, code, reason)

    state.admitting += 1  # counted before the first await: no race past max_sessions
    try:
        start = await asyncio.wait_for(read_start(receive), START_TIMEOUT_S)
    except (StreamError, TimeoutError) as exc:
        error = exc if isinstance(exc, StreamError) else StreamError("no_start", "no `start`")
        state.metrics.record_transport_error("twilio", error.code)
        await close(close_code(error), close_reason(error))
        return
    finally:
        state.admitting -= 1
    if start is None:
        return
    playback = TwilioPlayback(start.stream_sid, websocket.send_text, provider=start.provider)
    session = create_session(state, GA, False, playback=playback)
    kind = start.provider  # "twilio" or "telnyx" in /metrics
    on_error = lambda code: state.metrics.record_transport_error(kind, code)  # noqa: E731
    stream = TwilioStream(start, receive, close, playback, on_error)
    log.info("call %s: stream %s opened (session %s)", start.call_sid, start.stream_sid, session.id)
    playback.start()
    try:
        await SessionRunner(state, session, stream, kind).run()
    finally:
        await playback.close()
        log.info("call %s: stream %s ended", start.call_sid, start.stream_sid)
