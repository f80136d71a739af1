"""One GPT-Live session: the Live client events, taken into the same realtime session a
Realtime client drives (turn detection, barge-in, backchannels, the engine, the voices).

Live has no commit and no response.create: the user's audio goes into the session's
input as it comes and the session's own turn detection takes the turns. What Live adds
on top is said here: the strict `session.start`, mute (silence in place of the audio,
so the timeline keeps running), appends onto the timeline (instructions, thinking and
commentary become system messages of the conversation; commentary is also spoken at
the next natural point) and client delegation (delegation.py)."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from typing import Any

from app.live import client_events as live
from app.live.backend import check_model
from app.live.commentary import Commentary
from app.live.config import (
    LiveConfig,
    ResponsesDelegation,
    check_tokens,
    parse_config,
    realtime_update,
    resource,
    voice_of,
)
from app.live.delegation import DELEGATE_TOOL, Delegator
from app.live.outbox import LiveOutbox
from app.live.timeline import bytes_per_ms
from app.live.update import updated
from app.llm.catalog import LLMCatalog
from app.protocol.errors import ProtocolError
from app.protocol.server_events import Error, Wire
from app.protocol.server_events.live import (
    CommentaryAppended,
    InputAudioMuted,
    InputAudioUnmuted,
    InstructionsAppended,
    SessionStarted,
    SessionUpdated,
    ThinkingAppended,
)
from app.realtime.session import Session

log = logging.getLogger("r1voice.live")

SILENCE = {"audio/pcm": b"\x00", "audio/pcmu": b"\xff", "audio/pcma": b"\xd5"}
APPENDED = {
    "instructions": InstructionsAppended,
    "thinking": ThinkingAppended,
    "commentary": CommentaryAppended,
}
# How thinking and commentary read to the live model (its conversation's system messages).
FRAMING = {
    "instructions": "{}",
    "thinking": "Background from the work on the user's request (use it; do not read it out): {}",
    "commentary": "Tell the user this now, briefly and in your own words: {}",
}
ROLES = {"developer": "system", "user": "user", "assistant": "assistant"}


class LiveSession:
    def __init__(
        self,
        session: Session,
        outbox: LiveOutbox,
        voices: list[str],
        max_s: int,
        llms: LLMCatalog,
        route: str = "model",
    ) -> None:
        self.session, self.outbox = session, outbox
        self.config: LiveConfig | None = None
        self.muted = False
        self._voices = voices
        self._expires_at = int(time.time()) + max_s
        self._llms = llms
        self.tenant: str | None = None  # its creator's (app/server/tenants.py)
        self.delegator = Delegator(outbox, session, self.realtime, self.commentary, llms)
        self.delegator.route = route  # "model": the live model gets the `delegate` tool
        self.speaker = Commentary(session, outbox)
        outbox.on_answer_done = self.speaker.answer_done
        outbox.on_function_call = self.delegator.called
        outbox.on_heard = self.delegator.heard

    def resource(self) -> Wire:
        assert self.config is not None
        return resource(self.config, self.session.id, self._expires_at)

    async def handle(self, raw: str | bytes, arrived_at: float) -> None:
        """One Live client message; bad input becomes an `error`, the session goes on."""
        event_id = None
        self.session.last_event_at = arrived_at
        try:
            event = live.parse(raw)
            event_id = event.event_id
            await self._dispatch(event, arrived_at)
        except ProtocolError as exc:
            self.refuse(exc, event_id)
        except Exception as exc:  # a bug of ours must not end the conversation
            log.exception("failed to handle a Live client event")
            message = f"the server failed to handle this event ({type(exc).__name__}); the session goes on"
            self.outbox.emit(
                Error(
                    code="server_error",
                    message=message,
                    client_event_id=event_id,
                    kind="server_error",
                )
            )

    def refuse(self, exc: ProtocolError, event_id: str | None) -> None:
        error = Error(
            code=exc.code,
            message=exc.message,
            param=exc.param,
            client_event_id=event_id or exc.event_id,
        )
        self.outbox.emit(error)

    async def realtime(self, event: dict[str, Any], arrived_at: float | None = None) -> None:
        """A Realtime client event into the session (its refusals come out as Live's)."""
        await self.session.handle(json.dumps(event), arrived_at)

    async def _dispatch(self, event: live.LiveEvent, arrived_at: float) -> None:
        if isinstance(event, live.Start):
            await self._start(event)
            return
        if self.config is None:
            raise ProtocolError(
                "session_not_started",
                f"'{event.type}' before session.start: send session.start first and wait "  # type: ignore[attr-defined]
                "for session.started",
                param="type",
            )
        if isinstance(event, live.AudioAppend):
            await self._append_audio(event, arrived_at)
        elif isinstance(event, live.Mute | live.Unmute):
            self.muted = isinstance(event, live.Mute)
            ack = InputAudioMuted if self.muted else InputAudioUnmuted
            self.outbox.emit(ack(client_event_id=event.event_id))
        elif isinstance(event, live.Append):
            await self._append(event)
        elif isinstance(event, live.Update):
            await self._update(event)
        elif isinstance(event, live.Close):
            self.outbox.closing("close_requested", event.event_id)
        elif isinstance(event, live.ResponseItemCreate | live.ResponseCreate):
            self._backend_command(event)

    async def start_with(self, session: dict[str, Any]) -> None:
        """Start as `session.start` would (WebRTC: the offer's request carries it); a
        refusal is raised."""
        await self._start(live.Start(type="session.start", session=session))

    async def _start(self, event: live.Start) -> None:
        if self.config is not None:
            raise ProtocolError(
                "session_already_started",
                "the session has started already: session.start is sent once; change what "
                "may change with session.update",
                param="type",
            )
        config = parse_config(event.session, event.event_id)
        if isinstance(config.delegation, ResponsesDelegation):
            check_model(config.delegation.responses, self._llms, event.event_id)
        voice = voice_of(config, self._voices, event.event_id)
        await check_tokens(config, self.session.models.llm)
        self.outbox.format = config.format
        update = realtime_update(config, voice)
        if config.delegation is not None and self.delegator.route == "model":
            update["session"]["tools"] = [DELEGATE_TOOL]  # it costs every turn's prompt
        await self.realtime(update)
        for item in config.input or []:
            content_type = "output_text" if item.role == "assistant" else "input_text"
            content = [{"type": content_type, "text": item.content[0].text}]
            message = {"type": "message", "role": ROLES[item.role], "content": content}
            await self.realtime({"type": "conversation.item.create", "item": message})
        self.config = config
        self._delegate_as(config)
        self.outbox.resource = self.resource
        self.outbox.emit(SessionStarted(session=self.resource(), client_event_id=event.event_id))
        if config.input and config.input[-1].role == "user":  # a text turn: answer it
            await self.realtime({"type": "response.create"})

    async def _append_audio(self, event: live.AudioAppend, arrived_at: float) -> None:
        assert self.config is not None
        try:
            audio = base64.b64decode(event.audio, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(
                "invalid_value",
                "'audio' is not base64: send base64 of the session's audio format",
                param="audio",
            ) from None
        fmt = self.config.format
        self.outbox.timeline.heard(len(audio) / bytes_per_ms(fmt))
        # muted: the model hears silence, so the timeline and turn taking keep running
        given = (
            base64.b64encode(SILENCE[fmt.type] * len(audio)).decode() if self.muted else event.audio
        )
        append = {"type": "input_audio_buffer.append", "audio": given}
        if event.event_id is not None:
            append["event_id"] = event.event_id
        await self.realtime(append, arrived_at)

    async def _append(self, event: live.Append) -> None:
        if event.delegation_id is not None:
            self.delegator.delegations.check(event.delegation_id, event.event_id)
        message = {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": FRAMING[event.kind].format(event.content)}],
        }
        create: dict[str, Any] = {"type": "conversation.item.create", "item": message}
        if event.event_id is not None:
            create["event_id"] = event.event_id
        await self.realtime(create)
        at = self.outbox.timeline.now_ms()
        self.outbox.emit(
            APPENDED[event.kind](start_ms=at, end_ms=at, client_event_id=event.event_id)
        )
        if event.kind != "instructions":
            self.delegator.appended()
        if event.kind == "commentary":
            if event.delegation_id is not None:
                self.delegator.delegations.finish(event.delegation_id)
            self.speaker.add(event.content, server=False)

    async def commentary(self, text: str) -> None:
        """Server delegation's conclusion: said as a client's commentary would be."""
        message = {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": FRAMING["commentary"].format(text)}],
        }
        await self.realtime({"type": "conversation.item.create", "item": message})
        self.delegator.appended()
        self.speaker.add(text, server=True)

    async def _update(self, event: live.Update) -> None:
        assert self.config is not None
        offered = self.config.delegation is not None
        self.config = updated(self.config, event.session, self._llms, event.event_id)
        self._delegate_as(self.config)
        if not offered and self.config.delegation is not None and self.delegator.route == "model":
            tools = {"type": "realtime", "tools": [DELEGATE_TOOL]}
            await self.realtime({"type": "session.update", "session": tools})
        self.outbox.emit(SessionUpdated(session=self.resource(), client_event_id=event.event_id))

    def _backend_command(self, event: live.ResponseItemCreate | live.ResponseCreate) -> None:
        if not isinstance(self.config and self.config.delegation, ResponsesDelegation):
            raise ProtocolError(
                "invalid_request",
                f"{event.type!r} answers server delegation's tool calls: this session's "
                "delegation is not of type 'responses'",
                param="type",
            )
        outputs = self.delegator.tool_outputs
        if isinstance(event, live.ResponseItemCreate):
            outputs.output(event.item, event.event_id)
        else:
            outputs.resume(event.event_id)

    def _delegate_as(self, config: LiveConfig) -> None:
        """The delegator follows the session's delegation settings."""
        delegation = config.delegation
        self.delegator.active = delegation is not None
        self.delegator.ack_delay_ms = (
            (delegation.acknowledgement_delay_ms or 0) if delegation else 0
        )
        backend = isinstance(delegation, ResponsesDelegation)
        self.delegator.backend = delegation.responses if backend else None  # type: ignore[union-attr]
