"""The call's answer audio as Opus packets, encoded by the track itself.

aiortc's own encoder runs libopus in its `voip` application, whose lookahead delays every
sound by 6.5 ms, and takes only 48 kHz frames without holding one back. This one runs
`restricted low delay` (CELT only; its lookahead is 2.5 ms) and takes the session's 24 kHz
PCM16 as it is: Opus resamples inside the codec, and the listener decodes at 48 kHz as
always (RFC 7587: the RTP clock is 48 kHz whatever the input's rate). Speech loses nothing
a listener hears: CELT at 64 kbit/s is near transparent for a voice.

aiortc sends a track's `av.Packet` as it is (its sender "packs" pre-encoded media), so the
track hands it packets; the encoding runs on the default thread pool, as aiortc's does,
never on the event loop.
"""

from __future__ import annotations

import fractions

import numpy as np
from av import AudioFrame, CodecContext, Packet

IN_RATE = 24_000
RTP_RATE = 48_000  # Opus's RTP clock (RFC 7587)
FRAME_SAMPLES = IN_RATE // 50  # 20 ms
BIT_RATE = 64_000


class OpusPackets:
    """20 ms of 24 kHz mono PCM16 in, one Opus packet out, stamped on the 48 kHz clock."""

    def __init__(self) -> None:
        codec = CodecContext.create("libopus", "w")
        codec.bit_rate = BIT_RATE
        codec.format = "s16"
        codec.layout = "mono"
        codec.sample_rate = IN_RATE
        codec.time_base = fractions.Fraction(1, IN_RATE)
        codec.options = {"application": "lowdelay"}
        codec.open()  # here, not in the first answer's frame
        self._codec = codec
        self._time_base = fractions.Fraction(1, RTP_RATE)

    def encode(self, pcm: bytes, rtp_timestamp: int) -> Packet:
        """Encode one frame (FRAME_SAMPLES samples) at `rtp_timestamp` (48 kHz units)."""
        samples = np.frombuffer(pcm, np.int16)
        if samples.size != FRAME_SAMPLES:
            raise ValueError(f"an Opus frame here is {FRAME_SAMPLES} samples, got {samples.size}")
        frame = AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = IN_RATE
        frame.pts = rtp_timestamp // 2
        frame.time_base = self._codec.time_base
        (packet,) = self._codec.encode(frame)  # a whole frame in: one packet out, at once
        packet.pts = rtp_timestamp
        packet.time_base = self._time_base
        return packet
