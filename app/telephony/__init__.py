"""Phone calls: Twilio Media Streams (and the providers of its shape) at the edge of the
same Realtime session the WebSocket and WebRTC routes drive (docs/telephony.md)."""
