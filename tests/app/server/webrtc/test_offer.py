"""The offer's own checks: each refusal names what is wrong and what to send instead."""

from __future__ import annotations

import pytest

from app.server.webrtc.offer import MAX_SDP_CHARS, Offer, OfferError

AUDIO = "m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r\na=rtpmap:111 opus/48000/2\r\na=rtpmap:0 PCMU/8000\r\n"


def test_an_offer_with_opus_audio_is_taken() -> None:
    offer = Offer.parse("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n" + AUDIO)
    assert offer.sdp.startswith("v=0") and offer.sdp.endswith("\r\n")


def test_a_later_audio_section_counts_when_the_first_is_rejected() -> None:
    rejected = "m=audio 0 UDP/TLS/RTP/SAVPF 0\r\na=rtpmap:0 PCMU/8000\r\n"
    offer = Offer.parse("v=0\r\n" + rejected + AUDIO)  # not refused as "offer_without_audio"
    assert "opus/48000" in offer.sdp


@pytest.mark.parametrize(
    ("sdp", "code"),
    [
        ("", "invalid_offer"),
        ("\r\n\r\n", "invalid_offer"),
        ("<html></html>", "invalid_offer"),
        ("v=0\r\ns=-\r\n", "invalid_offer"),
        ("v=0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n", "offer_without_audio"),
        (
            "v=0\r\nm=audio 0 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n",
            "offer_without_audio",
        ),
        ("v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=rtpmap:0 PCMU/8000\r\n", "unsupported_codec"),
        ("v=0\r\n" + "a=x\r\n" * (MAX_SDP_CHARS // 4) + AUDIO, "invalid_offer"),
    ],
)
def test_refusals_name_the_problem(sdp: str, code: str) -> None:
    with pytest.raises(OfferError) as refused:
        Offer.parse(sdp)
    assert refused.value.code == code
    assert refused.value.message
