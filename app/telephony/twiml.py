"""The voice webhook's answer: TwiML that connects the call to our media stream."""

from __future__ import annotations

from collections.abc import Mapping
from xml.sax.saxutils import quoteattr


def connect_stream(
    url: str, parameters: Mapping[str, str], attributes: Mapping[str, str] | None = None
) -> str:
    """`<Response><Connect><Stream url=...>` with a `<Parameter>` for each of
    `parameters` (they come back in the stream's `start.customParameters`) and the
    `<Stream>`'s other `attributes` (Telnyx's TeXML: its bidirectional mode)."""
    attrs = "".join(f" {name}={quoteattr(value)}" for name, value in (attributes or {}).items())
    params = "".join(
        f"<Parameter name={quoteattr(name)} value={quoteattr(value)}/>"
        for name, value in parameters.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f"<Response><Connect><Stream url={quoteattr(url)}{attrs}>{params}</Stream>"
        "</Connect></Response>"
    )


def stream_url(base: str, path: str) -> str:
    """`base` (http(s)://host[:port][/prefix]) with `path` on it, as ws(s)://."""
    base = base.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    return base + path
