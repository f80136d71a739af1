"""Twilio's webhook signature (Twilio's documented example), replays, stream tokens."""

from __future__ import annotations

from app.telephony.signature import StreamTokens, WebhookGuard, twilio_signature

# Twilio's security docs' example request: its auth token, URL, POST fields and signature
TOKEN = "12345"
URL = "https://mycompany.com/myapp.php?foo=1&bar=2"
PARAMS = {
    "CallSid": "CA1234567890ABCDE",
    "Caller": "+14158675309",
    "Digits": "1234",
    "From": "+14158675309",
    "To": "+18005551212",
}
SIGNATURE = "RSOYDt4T1cUTdK1PDd93/VVr8B8="


def test_the_signature_is_twilios() -> None:
    assert twilio_signature(TOKEN, URL, PARAMS) == SIGNATURE
    assert twilio_signature(TOKEN, URL, {**PARAMS, "Digits": "1235"}) != SIGNATURE


def test_the_guard_takes_a_signed_request_once() -> None:
    now = [100.0]
    guard = WebhookGuard(TOKEN, clock=lambda: now[0])
    assert guard.refusal(URL, PARAMS, "") is not None  # unsigned
    assert "does not match" in (guard.refusal(URL + "&x=1", PARAMS, SIGNATURE) or "")
    assert "does not match" in (WebhookGuard("other").refusal(URL, PARAMS, SIGNATURE) or "")
    assert guard.refusal(URL, PARAMS, SIGNATURE) is None
    now[0] += 5
    assert "replay" in (guard.refusal(URL, PARAMS, SIGNATURE) or "")


def test_the_default_port_may_be_written_or_not() -> None:
    with_port = URL.replace("mycompany.com", "mycompany.com:443")
    assert WebhookGuard(TOKEN).refusal(with_port, PARAMS, SIGNATURE) is None  # signed bare
    signed_with_port = twilio_signature(TOKEN, with_port, PARAMS)
    assert WebhookGuard(TOKEN).refusal(URL, PARAMS, signed_with_port) is None
    other_port = URL.replace("mycompany.com", "mycompany.com:8443")
    assert WebhookGuard(TOKEN).refusal(other_port, PARAMS, SIGNATURE) is not None


def test_stream_tokens_are_single_use_and_expire() -> None:
    now = [1000.0]
    tokens = StreamTokens("sk-key", ttl_s=60, clock=lambda: now[0])
    token = tokens.mint()
    assert "not this server's" in (StreamTokens("sk-other").refusal(token) or "")
    assert "malformed" in (tokens.refusal("nonsense") or "")
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert tokens.refusal(forged) is not None
    assert tokens.refusal(token) is None
    assert "already used" in (tokens.refusal(token) or "")
    late = tokens.mint()
    now[0] += 61
    assert "expired" in (tokens.refusal(late) or "")
