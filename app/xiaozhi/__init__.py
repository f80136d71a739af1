"""xiaozhi ESP32 devices (78/xiaozhi-esp32): their OTA check-in and their WebSocket.

A device is an adapter at the edge: `DeviceTransport` (device.py) turns the device's
hello, `listen`/`abort` messages and Opus frames into the Realtime client events a
browser would send, and the session's server events back into the device's `stt`,
`llm`, `tts` messages and Opus frames. The session, its turn taking, engine and voices
are the Realtime route's own (app/server/session_runner.py). The device's MCP tools
become the session's function tools (mcp.py).
"""
