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
from aiortc.jitterbuffer import JitterBuffer
from aiortc.mediastreams import MediaStreamError
from av import AudioFrame

from app.audio import StreamResampler, float_to_pcm16
from app.server.transport import InputPcm

RATE = 24_000
# aiortc's audio jitter buffer holds 4 packets (80 ms) before it hands the decoder the
# first: smoothing for a playout clock. The session is no playout clock (VAD takes audio
# as it comes), so every packet held is 20 ms later speech_started and barge-in. It
# holds one: a frame is known whole once the next packet's timestamp is seen. Reordered
# packets are still put in order (it reads by sequence number); a lost one waits as before.
JITTER_PACKETS = 1
JITTER_CAPACITY = 16  # aiortc's, a power of 2


def hold_one_packet(receiver: RTCRtpReceiver) -> bool:
    """Give an audio receiver a jitter buffer that holds one packet; False (nothing
    changed) where this aiortc keeps it elsewhere."""
    slot = "_RTCRtpReceiver__jitter_buffer"  # aiortc offers no setting for it
    if not isinstance(getattr(receiver, slot, None), JitterBuffer):
        return False
    setattr(receiver, slot, JitterBuffer(capacity=JITTER_CAPACITY, prefetch=JITTER_PACKETS))
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
        if rate != RATE:
            resampler = self._resamplers.setdefault(rate, StreamResampler(rate, RATE))
            mono = resampler.process(mono)
        return float_to_pcm16(mono)
