"""One conversation over one WebSocket: client events in, server events out.

Events go out through a single queue (`outbox`) drained by one sender task, so the
order clients see is the order we emit; the dialect (beta or GA names) is applied
there. Input audio and turn taking live in `InputTurns`, answers in `Response`; the
control path (response.cancel, barge-in) cancels the response task, which aborts the
LLM request and stops TTS at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from app.llm import LLMBackendError
from app.models.components import Components
from app.protocol.dialect import BETA, GA, ga_session_patch, looks_ga, session_to_ga, to_ga
from app.protocol.schemas import (
    AudioAppend,
    AudioClear,
    AudioCommit,
    ItemCreate,
    ItemDelete,
    ItemTruncate,
    ProtocolError,
    ResponseCancel,
    ResponseCreate,
    SessionUpdate,
    error_event,
    new_id,
    parse_client_event,
)
from app.realtime.conversation import Conversation, Item
from app.realtime.responses.response import Response
from app.realtime.session_config import SessionConfig
from app.realtime.turns.coordinator import InputTurns
from app.server.metrics import Metrics

log = logging.getLogger("r1voice.session")


class Session:
    """The state and behaviour of one Realtime conversation."""

    def __init__(
        self, components: Components, metrics: Metrics, dialect: str | None = None
    ) -> None:
        self.components = components
        self.metrics = metrics
        self.id = new_id("sess")
        self.dialect = dialect or BETA
        self._dialect_fixed = dialect is not None  # told by the handshake
        self.config = SessionConfig.default(components.settings)
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.conversation = Conversation()
        self.input = InputTurns(self)
        self.response: Response | None = None
        self.responses: dict[str, Response] = {}  # assistant item id -> its response

    # -- plumbing ---------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        event.setdefault("event_id", new_id("event"))
        for out in to_ga(event) if self.dialect == GA else [event]:
            self.outbox.put_nowait(out)

    def emit_error(self, exc: ProtocolError, event_id: str | None = None) -> None:
        self.emit(error_event(exc.code, exc.message, param=exc.param, event_id=event_id))

    def session_object(self) -> dict[str, Any]:
        wire = self.config.to_wire(self.id)
        return session_to_ga(wire) if self.dialect == GA else wire

    async def start(self) -> None:
        self.emit({"type": "session.created", "session": self.session_object()})

    async def close(self) -> None:
        """Cancel everything this session started; frees LLM requests at once."""
        if self.response is not None:
            await self.response.cancel()
        await self.input.close()
        self.outbox.put_nowait(None)

    async def handle(self, raw: str | bytes) -> None:
        """Handle one client message; bad input becomes an `error` event, never an exception."""
        event_id = None
        try:
            event = parse_client_event(self._normalize(raw))
            event_id = event.event_id
            await self._dispatch(event)
        except ProtocolError as exc:
            self.emit_error(exc, event_id)
        except Exception as exc:  # a bug of ours must not end the conversation
            log.exception("failed to handle a client event")
            self.emit(
                error_event(
                    "server_error",
                    f"the server failed to handle this event ({type(exc).__name__}); the session goes on",
                    event_id=event_id,
                    kind="server_error",
                )
            )

    def _normalize(self, raw: str | bytes) -> str | bytes:
        """GA `session.update` -> the flat shape we validate (and switch to GA)."""
        marker = "session.update"
        if (marker.encode() if isinstance(raw, bytes) else marker) not in raw:  # type: ignore[operator]
            return raw  # the common case (audio appends): no JSON parsed twice
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return raw  # parse_client_event reports it
        if not isinstance(data, dict):
            return raw
        session = data.get("session")
        if (
            data.get("type") != "session.update"
            or not isinstance(session, dict)
            or not looks_ga(session)
        ):
            return raw
        if not self._dialect_fixed:
            self.dialect = GA
        if session.get("type") not in (None, "realtime"):
            raise ProtocolError(
                "unsupported_session_type",
                f"session type '{session.get('type')}' is not supported; use 'realtime'",
                param="session.type",
            )
        return json.dumps({**data, "session": ga_session_patch(session)})

    async def _dispatch(self, event: Any) -> None:
        if isinstance(event, AudioAppend):
            await self.input.append(event.audio)
        elif isinstance(event, SessionUpdate):
            self._update_session(event)
        elif isinstance(event, AudioCommit):
            self.input.commit_manual()
        elif isinstance(event, AudioClear):
            self.input.clear()
            self.emit({"type": "input_audio_buffer.cleared"})
        elif isinstance(event, ItemCreate):
            self._create_item(event)
        elif isinstance(event, ItemDelete):
            self.conversation.delete(event.item_id)
            self.emit({"type": "conversation.item.deleted", "item_id": event.item_id})
        elif isinstance(event, ItemTruncate):
            self._truncate_item(event)
        elif isinstance(event, ResponseCreate):
            self.start_response(event.response)
        elif isinstance(event, ResponseCancel):
            if self.response is None or self.response.done:
                raise ProtocolError("response_cancel_not_active", "there is no response to cancel")
            await self.response.cancel()

    def _update_session(self, event: SessionUpdate) -> None:
        self.config.apply(event.session, self.components.tts.voices())
        self.input.reconfigure()
        self.emit({"type": "session.updated", "session": self.session_object()})

    # -- conversation -------------------------------------------------------------------

    def _create_item(self, event: ItemCreate) -> None:
        if any(p.type in ("input_audio", "audio") and p.audio for p in event.item.content):
            raise ProtocolError(
                "unsupported_content",
                "audio content in conversation.item.create is not supported; stream it with "
                "input_audio_buffer.append instead",
                param="item.content",
            )
        texts = [p.text or p.transcript or "" for p in event.item.content]
        item = Item(
            id=event.item.id or new_id("item"), role=event.item.role, text=" ".join(texts).strip()
        )
        previous = self.conversation.add(item, after=event.previous_item_id)
        self.emit(
            {
                "type": "conversation.item.created",
                "previous_item_id": previous,
                "item": {
                    "id": item.id,
                    "object": "realtime.item",
                    "type": "message",
                    "status": "completed",
                    "role": item.role,
                    "content": [p.model_dump(exclude_none=True) for p in event.item.content],
                },
            }
        )

    def _truncate_item(self, event: ItemTruncate) -> None:
        item = self.conversation.get(event.item_id)
        response = self.responses.get(item.id)
        if item.role != "assistant" or response is None or not response.audio:
            raise ProtocolError(
                "invalid_item", f"item '{item.id}' is not an assistant audio item", param="item_id"
            )
        if event.audio_end_ms > response.audio_ms + 1:
            raise ProtocolError(
                "invalid_value",
                f"audio_end_ms {event.audio_end_ms} is past the item's audio ({response.audio_ms:.0f} ms)",
                param="audio_end_ms",
            )
        item.text = response.text_played(event.audio_end_ms)
        self.emit(
            {
                "type": "conversation.item.truncated",
                "item_id": item.id,
                "content_index": event.content_index,
                "audio_end_ms": event.audio_end_ms,
            }
        )

    # -- responses ----------------------------------------------------------------------

    def start_response(
        self, options: Any, turn: Any = None, held_user_text: str | None = None
    ) -> Response:
        if self.response is not None and not self.response.done:
            raise ProtocolError(
                "conversation_already_has_active_response",
                f"response {self.response.id} is still in progress; cancel it first or wait "
                "for response.done",
            )
        self.response = Response(self, options, turn, held_user_text)
        self.responses[self.response.item_id] = self.response
        while len(self.responses) > 64:  # only recent answers can be truncated
            self.responses.pop(next(iter(self.responses)))
        self.response.start()
        return self.response

    @property
    def responding(self) -> bool:
        return self.response is not None and not self.response.done

    def add_assistant_item(self, response: Response) -> None:
        self.conversation.add(
            Item(id=response.item_id, role="assistant", text=response.text, audio=response.audio)
        )

    def report_llm_error(self, exc: LLMBackendError) -> None:
        kind = "invalid_request_error" if exc.code == "llm_error" else "server_error"
        self.emit(error_event(exc.code, str(exc), kind=kind))
