"""One Realtime conversation over one connection: client events in, server events out.

The same session serves both transports: the WebSocket (events carry the audio both
ways) and WebRTC (events on a data channel; the audio on RTP tracks, handed in with
`append_pcm` and played by a `Playback` the session's answers write to).

The session wires its parts and dispatches: input audio and turn taking live in the
`TurnCoordinator`, answers in `Responses`, events go out through the `Outbox` (in the
client's dialect); `session.update` is session_update.py's, client items
client_items.py's, truncation truncation.py's, media track audio media_input.py's.
Dependencies run one way: session -> turns and session -> responses (neither imports the
other; what both speak of is in handoff.py) -> conversation / LLM / sink.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from app.components import Components
from app.llm import LLMBackend
from app.protocol import client_events as client
from app.protocol import events
from app.protocol.dialect import GA
from app.protocol.errors import ProtocolError
from app.protocol.parsing import parse_client_event
from app.protocol.server_events import (
    Error,
    InputAudioCleared,
    ItemCreated,
    ItemDeleted,
    ItemRetrieved,
    ItemTruncated,
    SessionCreated,
    SessionUpdated,
)
from app.realtime.chosen_models import ChosenModels
from app.realtime.client_dialect import ClientDialect
from app.realtime.client_items import check_fits, echoed, item_from_client
from app.realtime.conversation import Conversation, ConversationLimits
from app.realtime.history_summary import HistorySummary
from app.realtime.media_input import track_audio
from app.realtime.outbox import Outbox
from app.realtime.responses.playback import Playback
from app.realtime.responses.responses import Responses
from app.realtime.responses.spec import ResponseDeps, ResponseOutcome
from app.realtime.session_config import SessionConfig
from app.realtime.session_update import apply_update
from app.realtime.truncation import truncate
from app.realtime.turns.coordinator import TurnCoordinator
from app.realtime.turns.echo import EchoReference
from app.realtime.turns.idle import IdleTimer
from app.realtime.turns.input_audio import InputAudio
from app.realtime.turns.turn import TurnPolicy
from app.telemetry import OFF, SessionTrace, traced_asr, traced_llm, traced_voices
from app.tools.mcp_toolset import McpToolset
from app.tools.policy import McpPolicy

log = logging.getLogger("r1voice.session")


class Session:
    """The state and behaviour of one Realtime conversation."""

    def __init__(
        self,
        *,
        components: Components,
        dialect: str | None = None,
        on_response: Callable[[ResponseOutcome], None] = lambda _outcome: None,
        extensions: bool = False,
        on_merge: Callable[[str], None] = lambda _detection: None,
        meter_llm: Callable[[LLMBackend], LLMBackend] = lambda llm: llm,
        playback: Playback | None = None,
        trace: SessionTrace = OFF,
        outbox: Outbox | None = None,
    ) -> None:
        """`playback`: the server's own audio track (WebRTC), which plays the answers'
        audio in place of `response.output_audio.delta` events; `outbox`: another
        protocol's (GPT-Live's, app/live/), which translates the events."""
        settings = components.settings
        self.id = events.new_id("sess")
        self.started_at = self.last_event_at = time.monotonic()  # for idle and max age
        self.outbox = outbox or Outbox(dialect or GA, extensions=extensions)
        self.outbox.observe = trace.event  # the trace reads the turns off the events
        self.trace = trace
        self.dialect = ClientDialect(self.outbox, fixed=dialect is not None)
        self.models = ChosenModels(components, meter_llm)  # the server's to begin with
        self.config = SessionConfig.default(settings, self.models.llm.model)
        self.models.asr.language = self.config.transcription_language  # the server's default
        self._voices = components.tts.voices()
        self.conversation = Conversation(
            ConversationLimits(
                settings.conversation_max_items,
                settings.conversation_max_item_chars,
                settings.conversation_max_chars,
            )
        )
        self.echo = EchoReference(threshold=settings.echo_correlation)
        self.summary = HistorySummary(self.config, self.conversation, self.outbox.emit)
        self._playback = playback
        if playback is not None:
            playback.attach(self.outbox.emit)
        deps = ResponseDeps(
            sink=self.outbox.emit,
            conversation=self.conversation,
            llm=traced_llm(trace, self.models.llm),
            voices=traced_voices(trace, components.tts),
            audio_lead_ms=settings.audio_lead_ms,
            on_audio=trace.playing(self.echo.played),  # recorded as it plays
            on_dropped=self.summary.fold,
            playback=playback,
            mcp=McpToolset(McpPolicy.from_settings(settings), self.outbox.emit, self.conversation),
        )
        self._on_response = on_response
        self.responses = Responses(self.config, deps, self._response_ended)
        self.turns = TurnCoordinator(
            audio=InputAudio(components.vad, self.config.input_format, self.config.turn_detection),
            asr=traced_asr(trace, self.models.asr),
            conversation=self.conversation,
            responses=self.responses,
            emit=self.outbox.emit,
            policy=TurnPolicy.of(settings),
            turn_detection=self.config.turn_detection,
            scorer=components.turn,
            on_merge=on_merge,
            echo=self.echo,
            output=playback,
            idle_timer=IdleTimer(self.config.max_idle_nudges),
            false_interruption_timeout_s=self.config.false_interruption_timeout,
        )
        self.turns.audio.heard = trace.heard  # the user's audio, recorded as heard
        self.responses.user_idle = lambda: self.turns.idle  # a late tool result waits

    def session_object(self) -> dict[str, Any]:
        return self.trace.announce(self.dialect.session_object(self.config.to_wire(self.id)))

    @property
    def idle(self) -> bool:
        """No answer running and no turn being spoken, transcribed or about to be answered."""
        return not self.responses.responding and self.turns.idle

    def _response_ended(self, outcome: ResponseOutcome) -> None:
        self._on_response(outcome)
        if not (outcome.visible and outcome.in_conversation):
            return  # an out-of-band answer is no turn of the conversation's
        if outcome.status in ("completed", "incomplete"):  # idle time counts once it played
            self.turns.idle_timer.answered(self.echo.plays_until)
        else:  # interrupted or failed: wait for the next answer
            self.turns.idle_timer.stop()

    def refuse_oversized(self, size: int, limit: int) -> None:
        """A client message over the size limit, left unparsed (nothing else changes)."""
        message = (
            f"the message is {size} bytes; the limit is {limit} (R1VOICE_MAX_MESSAGE_BYTES): "
            "send audio in smaller appends"
        )
        self.outbox.emit(Error(code="message_too_large", message=message))

    async def start(self) -> None:
        self.trace.start(self.id)
        self.outbox.emit(SessionCreated(session=self.session_object()))

    async def close(self, reason: str = "client_cancelled") -> None:
        """Stop everything this session started: turns first (an early transcription
        finishing now could otherwise start an answer), then the answer (cancelled with
        `reason`); frees LLM requests at once."""
        await self.turns.close()
        await self.responses.close(reason)
        await self.summary.close()
        self.trace.close([item.to_wire() for item in self.conversation.items])
        self.outbox.close()

    async def handle(self, raw: str | bytes, arrived_at: float | None = None) -> None:
        """Handle one client message (that reached the server at `arrived_at`, on the
        monotonic clock; default now); bad input becomes an `error` event, never an
        exception."""
        event_id = None
        self.last_event_at = time.monotonic() if arrived_at is None else arrived_at
        flat = raw
        try:
            flat = self.dialect.flat(raw)
            event = parse_client_event(flat)
            event_id = event.event_id
            await self._dispatch(event, self.last_event_at)
        except ProtocolError as exc:
            exc = self.dialect.refusal(exc, raw, flat)
            event_id = event_id or exc.event_id  # refused before it parsed: still echoed
            self.outbox.emit(_refusal(exc, event_id))
        except Exception as exc:  # a bug of ours must not end the conversation
            log.exception("failed to handle a client event")
            message = f"the server failed to handle this event ({type(exc).__name__}); the session goes on"
            self.outbox.emit(_our_failure(message, event_id))

    async def append_pcm(self, pcm: bytes, arrived_at: float | None = None) -> None:
        """Microphone audio from a media track (WebRTC): PCM16 mono at 24 kHz, taken in as
        an `input_audio_buffer.append` in the session's input format would be."""
        audio = track_audio(pcm, self.config.input_format)
        self.last_event_at = time.monotonic() if arrived_at is None else arrived_at
        try:
            await self.turns.append(audio, self.last_event_at)
        except ProtocolError as exc:  # a full buffer (turn detection off, no commit)
            self.outbox.emit(_refusal(exc, None))
        except Exception as exc:  # a bug of ours must not end the conversation
            log.exception("failed to take in a media track's audio")
            message = f"the server failed to take in the microphone's audio ({type(exc).__name__})"
            self.outbox.emit(_our_failure(message, None))

    async def _dispatch(self, event: Any, arrived_at: float) -> None:
        if isinstance(event, client.AudioAppend):
            await self.turns.append(event.audio, arrived_at)
        elif isinstance(event, client.SessionUpdate):
            await self._update_session(event)
        elif isinstance(event, client.AudioCommit):
            await self.turns.commit_manual()
        elif isinstance(event, client.AudioClear):
            await self.turns.clear()
            self.outbox.emit(InputAudioCleared())
        elif isinstance(event, client.OutputAudioClear):
            await self._clear_output_audio()
        elif isinstance(event, client.ItemCreate):
            await self._create_item(event)
        elif isinstance(event, client.ItemDelete):
            self.conversation.delete(event.item_id)
            self.outbox.emit(ItemDeleted(item_id=event.item_id))
        elif isinstance(event, client.ItemTruncate):
            await self._truncate_item(event)
        elif isinstance(event, client.ItemRetrieve):
            item = self.conversation.get(event.item_id).to_wire()
            self.outbox.emit(ItemRetrieved(item=item))
        elif isinstance(event, client.ResponseCreate):
            await self.responses.create(event.response, event.event_id)
        elif isinstance(event, client.ResponseCancel):
            await self.responses.cancel()

    async def _update_session(self, event: client.SessionUpdate) -> None:
        """Apply the whole update, or none of it: one reply either way (`session.updated`,
        or one `error` naming the field), as OpenAI's server gives, so a client waiting
        for the reply to its event never reads another event's."""
        await apply_update(event, self.config, self.models, self._voices)
        self.trace.configure(event.session.tracing)
        self.responses.use_llm(traced_llm(self.trace, self.models.llm))  # from the next answer on
        cfg = self.config
        await self.turns.reconfigure(
            cfg.input_format,
            cfg.turn_detection,
            cfg.show_transcripts,
            cfg.max_idle_nudges,
            cfg.false_interruption_timeout,
        )
        self.outbox.emit(SessionUpdated(session=self.session_object()))
        self.responses.tools_changed()

    async def _clear_output_audio(self) -> None:
        """Stop the answer's audio the server plays; one still being spoken stops too (its
        item keeps what was played), as no more of its audio may play."""
        if self._playback is None:
            raise ProtocolError(
                "invalid_event",
                "output_audio_buffer.clear is for WebRTC connections, where the server plays "
                "the audio; over the WebSocket stop playback on the client and send "
                "conversation.item.truncate",
            )
        self._playback.clear()  # says output_audio_buffer.cleared
        active = self.responses.active
        if active is not None and active.speaking:
            await active.cancel("client_cancelled")

    async def _create_item(self, event: client.ItemCreate) -> None:
        item = item_from_client(event)
        self.conversation.check_room(len(item.text or ""))
        await check_fits(item, self.models.llm)
        previous = self.conversation.add(item, after=event.previous_item_id)
        if item.role == "user":  # typed words: the user is not idle
            self.turns.idle_timer.user_spoke()
        self.outbox.emit(ItemCreated(previous_item_id=previous, item=echoed(event, item)))

    async def _truncate_item(self, event: client.ItemTruncate) -> None:
        await truncate(event, self.responses, self.conversation)
        self.outbox.emit(
            ItemTruncated(
                item_id=event.item_id,
                content_index=event.content_index,
                audio_end_ms=event.audio_end_ms,
            )
        )


def _refusal(exc: ProtocolError, event_id: str | None) -> Error:
    return Error(code=exc.code, message=exc.message, param=exc.param, client_event_id=event_id)


def _our_failure(message: str, event_id: str | None) -> Error:
    """A bug of ours, reported; the session goes on."""
    return Error(
        code="server_error", message=message, client_event_id=event_id, kind="server_error"
    )
