"""A client's SDP offer, checked before aiortc sees it, so each refusal says what to fix.

aiortc's own parser raises bare ValueErrors (or accepts an offer it then cannot answer);
these checks name the problem: not SDP at all, no audio to talk over, no Opus.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SDP_CHARS = 64 * 1024  # a browser's offer is a few KiB


class OfferError(ValueError):
    """An offer refused, with an OpenAI-style error code and a message that says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class Offer:
    sdp: str

    @classmethod
    def parse(cls, sdp: str) -> Offer:
        text = sdp.strip()
        if not text:
            raise OfferError(
                "invalid_offer",
                "the request has no SDP offer: send the RTCPeerConnection's offer as the body "
                "(Content-Type: application/sdp) or as the `sdp` field of a multipart form",
            )
        if len(text) > MAX_SDP_CHARS:
            raise OfferError("invalid_offer", f"the SDP offer is over {MAX_SDP_CHARS} characters")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines[0] != "v=0" or not any(line.startswith("m=") for line in lines):
            raise OfferError(
                "invalid_offer",
                "the body is not an SDP offer (it must start with v=0 and have m= sections): "
                "send pc.localDescription.sdp after pc.createOffer()",
            )
        audio = _audio_section(lines)
        if audio is None:
            raise OfferError(
                "offer_without_audio",
                "the SDP offer has no audio m= section: add a microphone track (or an audio "
                "transceiver, pc.addTransceiver('audio')) before creating the offer",
            )
        if not any(
            line.lower().startswith("a=rtpmap:") and "opus/48000" in line.lower() for line in audio
        ):
            raise OfferError(
                "unsupported_codec",
                "the offer's audio has no Opus (opus/48000/2), the only codec served here: "
                "leave Opus among the audio codecs the peer connection offers",
            )
        return cls(text + "\r\n")


def _audio_section(lines: list[str]) -> list[str] | None:
    """The lines of the first audio m= section that can carry media (port not 0)."""
    section: list[str] | None = None
    for line in lines:
        if line.startswith("m="):
            if section is not None:
                return section
            fields = line[2:].split()
            section = [line] if fields[:1] == ["audio"] and fields[1:2] != ["0"] else None
        elif section is not None:
            section.append(line)
    return section
