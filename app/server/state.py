"""Process-wide server state shared by the routes (through FastAPI dependencies)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request, WebSocket

from app.components import Components
from app.realtime.session import Session
from app.server.access import ClientSecrets
from app.server.drain import Drain
from app.server.heap_trimmer import HeapTrimmer
from app.server.metrics import Metrics
from app.server.webrtc.peers import Peers
from app.settings import Settings
from app.telemetry import Telemetry


@dataclass
class ServerState:
    settings: Settings
    started_at: float = field(default_factory=time.monotonic)
    components: Components | None = None
    ready: bool = False
    load_error: str | None = None
    ready_after_s: float | None = None
    sessions: dict[str, Session] = field(default_factory=dict)  # open sessions by id
    admitting: int = 0  # sessions past the checks, still in their handshake
    metrics: Metrics = field(default_factory=Metrics)
    client_secrets: ClientSecrets = field(default_factory=ClientSecrets)
    drain: Drain = field(default_factory=Drain)
    heap: HeapTrimmer = field(default_factory=HeapTrimmer)  # trimmed as sessions close
    peers: Peers = field(default_factory=Peers)  # open WebRTC peers (their sessions: above)
    telemetry: Telemetry = field(init=False)  # traces and session reports

    def __post_init__(self) -> None:
        self.telemetry = Telemetry.from_settings(self.settings)


def _state_from_http(request: Request) -> ServerState:
    return request.app.state.server  # type: ignore[no-any-return]


def _state_from_ws(websocket: WebSocket) -> ServerState:
    return websocket.app.state.server  # type: ignore[no-any-return]


HttpState = Annotated[ServerState, Depends(_state_from_http)]
WsState = Annotated[ServerState, Depends(_state_from_ws)]
