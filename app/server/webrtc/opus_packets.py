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

The track sends silence whenever no answer plays, most of a call. Once the encoder has
settled into the same packet for silence (CELT's silence flag, 3 bytes), that packet is
sent again without encoding: libopus fed zeros for seconds runs its filters into
denormal floats, and each silent frame then costs four times the CPU of a frame of
speech, for nothing a listener hears.
"""

from __future__ import annotations

import fractions

import numpy as np
from av import AudioFrame, CodecContext, Packet

from app.audio import PROTOCOL_RATE

RTP_RATE = 48_000  # Opus's RTP clock (RFC 7587)
FRAME_SAMPLES = PROTOCOL_RATE // 50  # 20 ms
BIT_RATE = 64_000
SILENCE = bytes(FRAME_SAMPLES * 2)
SETTLED = 2  # silent frames in a row encoded to the same packet: it is the encoder's last word


class OpusPackets:
    """20 ms of 24 kHz mono PCM16 in, one Opus packet out, stamped on the 48 kHz clock."""

    def __init__(self) -> None:
        codec = CodecContext.create("libopus", "w")
        codec.bit_rate = BIT_RATE
        codec.format = "s16"
        codec.layout = "mono"
        codec.sample_rate = PROTOCOL_RATE
        codec.time_base = fractions.Fraction(1, PROTOCOL_RATE)
        codec.options = {"application": "lowdelay"}
        codec.open()  # here, not in the first answer's frame
        self._codec = codec
        self._time_base = fractions.Fraction(1, RTP_RATE)
        self._silent_packet = b""  # what the last silent frame encoded to
        self._silent_repeats = 0  # how many silent frames in a row encoded to it
        self.frames_encoded = 0

    def settled_silence(self, pcm: bytes, rtp_timestamp: int) -> Packet | None:
        """The packet of a silent frame without encoding it, once the encoder has said
        the same for silence SETTLED times in a row; None where the frame must be encoded.
        Cheap enough for the event loop."""
        if self._silent_repeats < SETTLED or pcm != SILENCE:
            return None
        return self._stamped(Packet(self._silent_packet), rtp_timestamp)

    def encode(self, pcm: bytes, rtp_timestamp: int) -> Packet:
        """Encode one frame (FRAME_SAMPLES samples) at `rtp_timestamp` (48 kHz units)."""
        samples = np.frombuffer(pcm, np.int16)
        if samples.size != FRAME_SAMPLES:
            raise ValueError(f"an Opus frame here is {FRAME_SAMPLES} samples, got {samples.size}")
        frame = AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = PROTOCOL_RATE
        frame.pts = rtp_timestamp // 2
        frame.time_base = self._codec.time_base
        (packet,) = self._codec.encode(frame)  # a whole frame in: one packet out, at once
        self.frames_encoded += 1
        if pcm != SILENCE:
            self._silent_packet, self._silent_repeats = b"", 0
        else:
            data = bytes(packet)
            self._silent_repeats = self._silent_repeats + 1 if data == self._silent_packet else 1
            self._silent_packet = data
        return self._stamped(packet, rtp_timestamp)

    def _stamped(self, packet: Packet, rtp_timestamp: int) -> Packet:
        packet.pts = rtp_timestamp
        packet.time_base = self._time_base
        return packet
