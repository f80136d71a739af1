"""The call's incoming audio: the browser's Opus, decoded, as 24 kHz PCM16 for the session.

aiortc decodes Opus on its receiver's own decoder thread and hands 20 ms frames of 48 kHz
stereo to `recv()`; the downmix and the resampling to the protocol's 24 kHz run on the
default thread pool (one frame at a time, in order: the resampler keeps state between
frames), never on the event loop. Each frame goes to the call's inbox as `InputPcm`,
where the session takes it in as it would an `input_audio_buffer.append`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
from aiortc import MediaStreamTrack, RTCRtpReceiver
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.mediastreams import MediaStreamError
from av import AudioFrame

from app.audio import PROTOCOL_RATE, StreamResampler, float_to_pcm16
from app.server.transport import InputPcm

# aiortc's audio jitter buffer holds 4 packets (80 ms) before it hands the decoder the
# first: smoothing for a playout clock. The session is no playout clock (VAD takes audio
# as it comes), so every packet held is 20 ms later speech_started and barge-in, and a
# later end of speech. aiortc's buffer also waits for the next packet's timestamp to know
# a frame is whole, as video needs; an RTP packet of Opus is one whole frame (RFC 7587),
# so this one hands each packet over as it comes, in order: a reordered packet waits for
# the one before it (read by sequence number), and a lost one is waited for as before.
JITTER_CAPACITY = 16  # aiortc's, a power of 2


class InOrderJitterBuffer(JitterBuffer):
    """aiortc's jitter buffer, but a packet in order is a frame at once (no prefetch)."""

    def __init__(self) -> None:
        super().__init__(capacity=JITTER_CAPACITY)

    def _remove_frame(self, sequence_number: int) -> JitterFrame | None:
        origin = self._origin
        packet = None if origin is None else self._packets[origin % self.capacity]
        if packet is None:
            return None  # the next in order has not come
        self.remove(1)
        return JitterFrame(data=packet._data, timestamp=packet.timestamp)  # type: ignore[attr-defined]


def no_playout_delay(receiver: RTCRtpReceiver) -> bool:
    """Give an audio receiver the in-order jitter buffer; False (nothing changed) where
    this aiortc keeps its buffer elsewhere."""
    slot = "_RTCRtpReceiver__jitter_buffer"  # aiortc offers no setting for it
    if not isinstance(getattr(receiver, slot, None), JitterBuffer):
        return False
    setattr(receiver, slot, InOrderJitterBuffer())
    return True


class InputReader:
    def __init__(self, track: MediaStreamTrack, put: Callable[[InputPcm], Awaitable[None]]):
        self._track = track
        self._put = put
        self._resamplers: dict[int, StreamResampler] = {}

    async def run(self) -> None:
        """Until the track ends (the peer left or the call closed)."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                frame = await self._track.recv()
            except MediaStreamError:
                return
            if not isinstance(frame, AudioFrame):
                continue
            pcm = await loop.run_in_executor(None, self._convert, frame)
            if pcm:
                await self._put(InputPcm(pcm))

    def _convert(self, frame: AudioFrame) -> bytes:
        """One decoded frame -> mono PCM16 at 24 kHz."""
        samples = frame.to_ndarray()
        channels = len(frame.layout.channels)
        if frame.format.is_planar:
            mono = samples.astype(np.float32).mean(axis=0)
        else:  # packed: one row, the channels interleaved
            mono = samples.reshape(-1, channels).astype(np.float32).mean(axis=1)
        if samples.dtype == np.int16:
            mono /= 32768.0
        rate = frame.sample_rate
        if rate != PROTOCOL_RATE:
            resampler = self._resamplers.setdefault(rate, StreamResampler(rate, PROTOCOL_RATE))
            mono = resampler.process(mono)
        return float_to_pcm16(mono)
