"""Commentary waiting to be said: the live model says it at the next natural point, when
no answer runs and the user is not in a turn. It is told so by a stage direction that
ends its prompt, as a late tool result is (a small model told the words last, quoted,
says them; left with a system message earlier in the prompt, it talks past them).

Server delegation's conclusion is said as the backend wrote it: the voice speaks it and
no live model rewrites it. The backend is the bigger model, and the small live models
here, told to repeat its words, garbled or talked past them (`r1voice bench answers
--voice-delegation`: the delegated answer right, the spoken one wrong). A client's
commentary still goes through the live model, which fits it to the conversation.

A client's commentary was acknowledged when it was appended
(`session.commentary.appended` with its event id). Server delegation's commentary (the
backend's conclusion) is appended by the server itself: it goes onto the timeline where
it is said, so its `session.commentary.appended` comes right before the answer that says
it, after the audio of the answer before (a client can tell the two apart)."""

from __future__ import annotations

import asyncio

from app.live.outbox import LiveOutbox
from app.protocol.errors import ProtocolError
from app.protocol.server_events.live import CommentaryAppended
from app.realtime.session import Session

NOTE = 'Say this to the user, word for word: "{}"'  # a small model rephrasing garbles it


class Commentary:
    def __init__(self, session: Session, outbox: LiveOutbox) -> None:
        self._session, self._outbox = session, outbox
        self._to_say: list[str] = []  # commentaries waiting for a natural point
        self._servers = 0  # ... of them the server's own (acknowledged when said)
        self._speaking: asyncio.Task[None] | None = None

    def add(self, text: str, server: bool) -> None:
        self._to_say.append(text.strip())
        self._servers += server
        self._soon()

    def answer_done(self) -> None:
        if self._to_say:
            self._soon()

    def _soon(self) -> None:
        if self._speaking is None or self._speaking.done():
            self._speaking = asyncio.get_running_loop().create_task(self._speak())

    async def _speak(self) -> None:
        while self._to_say and not self._outbox.closed:
            if not self._session.idle:
                await asyncio.sleep(0.1)  # polled: no event says the session became idle
                continue
            words = " ".join(self._to_say)
            try:
                if self._servers == len(self._to_say):  # the backend's own words, as they are
                    self._session.responses.start(say=words)
                else:
                    self._session.responses.start(note=NOTE.format(words))
            except ProtocolError:  # an answer started meanwhile: at its end
                await asyncio.sleep(0.1)
                continue
            at = self._outbox.timeline.now_ms()
            for _ in range(self._servers):
                self._outbox.emit(CommentaryAppended(start_ms=at, end_ms=at))
            self._to_say, self._servers = [], 0
