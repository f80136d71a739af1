"""WebRTC beside the WebSocket: `POST /v1/realtime/calls` (OpenAI's GA protocol), on aiortc."""
