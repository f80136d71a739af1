"""The spoken side of one answer: its voice, chosen by the language of its first clause;
its audio, sent as deltas or played by the server's own track (WebRTC); and its pauses:
speech over the answer stops the audio until it resumes or the answer is cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.realtime.responses.speaker import Speaker
from app.realtime.responses.spec import ResponseDeps, ResponseSpec
from app.speech.voices import text_language


class AnswerVoice:
    """Speaks answer `response_id`; `send(piece)` gets each audio piece the client plays
    (none when the server's track plays it); `language()` is the turn's, as heard."""

    def __init__(
        self,
        spec: ResponseSpec,
        deps: ResponseDeps,
        response_id: str,
        send: Callable[[bytes], None],
        language: Callable[[], str | None],
    ) -> None:
        self.spec, self.deps, self._send, self._language = spec, deps, send, language
        self.name: str | None = None  # the voice speaking it, chosen at its first clause
        # the server's own track plays the audio (WebRTC): no audio deltas then
        self.playout = deps.playback.playout(response_id) if deps.playback else None
        self.speaker = Speaker(
            self._synthesize,
            spec.output_format,
            deps.audio_lead_ms,
            self._sent,
            playout=self.playout,
        )
        self._heard_ms: float | None = None  # what the client said it heard of it, paused

    @property
    def audio_ms(self) -> float:
        return self.speaker.audio_ms

    @property
    def paused(self) -> bool:
        return self.speaker.paused

    def run(
        self, clauses: asyncio.Queue[str | None], released: asyncio.Event
    ) -> asyncio.Task[None]:
        """Speak the clauses as they come (None ends them), once `released`."""
        return asyncio.create_task(self.speaker.run(clauses, released))

    def stop(self) -> None:
        self.speaker.stop()

    def pause(self, rewind: bool = True) -> None:
        """No more audio until `resume`; `rewind`: the client dropped what it had queued,
        so a resume goes on from what it heard (else from what was sent)."""
        self.speaker.pause(rewind=rewind)

    def resume(self) -> None:
        self._heard_ms = None
        self.speaker.resume()

    def heard_paused(self, audio_end_ms: float) -> None:
        """The client said it heard this much of the paused answer."""
        self._heard_ms = audio_end_ms

    def text_played(self, audio_end_ms: float) -> str:
        return self.speaker.text_played(audio_end_ms)

    def heard_text(self, barge_in: bool) -> str | None:
        """The words heard of a cancelled answer, where that is known: told by a barge-in
        (`barge_in`), or exactly (the server's track); None otherwise."""
        if not (barge_in or self.speaker.exact):
            return None
        heard = self.speaker.played_ms() if self._heard_ms is None else self._heard_ms
        return self.speaker.text_played(heard)

    async def _synthesize(self, text: str, rate: int, slack_s: float) -> Any:
        first = self.name is None
        if first:  # the answer's first clause says its language
            self.name = self.deps.voices.choose(
                self.spec.voice, text_language(text, self._language())
            )
        assert self.name is not None
        return await self.deps.voices.speak(text, rate, self.spec.speed, self.name, slack_s, first)

    def _sent(self, piece: bytes) -> None:
        if self.playout is None:  # the client plays it
            self._send(piece)
        self.deps.on_audio(piece, self.spec.output_format)
