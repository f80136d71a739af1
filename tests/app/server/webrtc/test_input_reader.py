"""The call's receiving side: how long aiortc holds the microphone's packets."""

from __future__ import annotations

from aiortc import RTCCertificate, RTCDtlsTransport, RTCIceGatherer, RTCIceTransport, RTCRtpReceiver
from aiortc.rtp import RtpPacket

from app.server.webrtc.input_reader import hold_one_packet


def _receiver() -> RTCRtpReceiver:
    transport = RTCIceTransport(RTCIceGatherer())
    return RTCRtpReceiver(
        "audio", RTCDtlsTransport(transport, [RTCCertificate.generateCertificate()])
    )


def _packet(n: int) -> RtpPacket:
    packet = RtpPacket(payload_type=111, sequence_number=n, timestamp=960 * n, payload=bytes([n]))
    packet._data = packet.payload  # type: ignore[attr-defined]  # the receiver depayloads it so
    return packet


def test_a_frame_goes_to_the_decoder_once_the_next_packet_arrives() -> None:
    """aiortc's default held four packets more (80 ms of speech before VAD heard it)."""
    receiver = _receiver()
    assert hold_one_packet(receiver)
    buffer = receiver._RTCRtpReceiver__jitter_buffer  # type: ignore[attr-defined]
    assert buffer.add(_packet(0)) == (False, None)
    released = buffer.add(_packet(1))[1]
    assert released is not None and released.data == bytes([0]) and released.timestamp == 0


def test_packets_out_of_order_still_come_out_in_order() -> None:
    receiver = _receiver()
    assert hold_one_packet(receiver)
    buffer = receiver._RTCRtpReceiver__jitter_buffer  # type: ignore[attr-defined]
    out = [buffer.add(_packet(n))[1] for n in (0, 2, 1, 3)]
    assert [frame.data if frame else None for frame in out] == [None, None, b"\x00", b"\x01"]
    assert buffer.add(_packet(4))[1].data == b"\x02"  # type: ignore[union-attr]
