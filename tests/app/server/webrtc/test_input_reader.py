"""The call's receiving side: how long aiortc holds the microphone's packets."""

from __future__ import annotations

from typing import Any

from aiortc import RTCCertificate, RTCDtlsTransport, RTCIceGatherer, RTCIceTransport, RTCRtpReceiver
from aiortc.rtp import RtpPacket

from app.server.webrtc.input_reader import no_playout_delay


def _receiver() -> RTCRtpReceiver:
    transport = RTCIceTransport(RTCIceGatherer())
    return RTCRtpReceiver(
        "audio", RTCDtlsTransport(transport, [RTCCertificate.generateCertificate()])
    )


def _packet(n: int) -> RtpPacket:
    packet = RtpPacket(payload_type=111, sequence_number=n, timestamp=960 * n, payload=bytes([n]))
    packet._data = packet.payload  # type: ignore[attr-defined]  # the receiver depayloads it so
    return packet


def _buffer() -> Any:
    receiver = _receiver()
    assert no_playout_delay(receiver)
    return receiver._RTCRtpReceiver__jitter_buffer  # type: ignore[attr-defined]


def test_a_packet_in_order_goes_to_the_decoder_as_it_arrives() -> None:
    """aiortc's default held four packets more (80 ms of speech before VAD heard it), and
    then one, waiting for the next packet's timestamp (a video frame spans packets; an
    Opus frame is one packet)."""
    buffer = _buffer()
    for n in range(3):
        released = buffer.add(_packet(n))[1]
        assert released is not None and released.data == bytes([n])
        assert released.timestamp == 960 * n


def test_packets_out_of_order_still_come_out_in_order() -> None:
    buffer = _buffer()
    out = [buffer.add(_packet(n))[1] for n in (0, 2, 1, 3, 4)]
    assert [frame.data if frame else None for frame in out] == [
        b"\x00",
        None,  # 1 has not come
        b"\x01",
        b"\x02",
        b"\x03",
    ]


def test_a_lost_packet_is_waited_for_until_the_buffer_is_full() -> None:
    buffer = _buffer()
    assert buffer.add(_packet(0))[1] is not None
    assert all(buffer.add(_packet(n))[1] is None for n in range(2, 17))  # 1 never comes
    assert buffer.add(_packet(17))[1].data == b"\x02"  # type: ignore[union-attr]
