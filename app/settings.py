"""Server configuration: defaults, overridable by R1VOICE_* environment variables and CLI flags."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from typing import Any

from engine import DEFAULT_LLM

SPECULATIVE_MODES = ("off", "ngram", "draft", "auto")
DEFAULT_SYSTEM_PROMPT = (
    "You are a friendly voice assistant. Answer in one or two short spoken sentences, "
    "without lists, markdown or emojis, in the language the user speaks."
)


@dataclass
class Settings:
    """Everything the server needs to start. Field `x` is read from env `R1VOICE_X`."""

    llm_backend: str = "embedded"  # "embedded" (our engine), "transformers" or "remote"
    llm_model: str = DEFAULT_LLM
    # embedded engine weights: "int8", "int4" or "none"; None: the model's own (int8, int4
    # for qwen2.5-coder-1.5b-instruct: engine.default_quantization)
    quantization: str | None = None
    # embedded engine: refuse (429 server_busy) while a request has waited longer than
    # this to start; 0: never (requests queue, and time to first token grows under load)
    llm_max_queue_delay_s: float = 0.0
    # embedded engine: prompt clustering for KV retention (engine.scheduling.clustering; opt-in: it
    # pays off only when the prompts' shared prefixes outgrow the KV pool, see README)
    llm_clustering: bool = False
    # embedded engine: exact speculative decoding (docs/engine.md): "off", "ngram" (prompt
    # lookup: no second model, and a step without a draft costs what it did without it),
    # "draft" (llm_draft_model drafts) or "auto" (per sequence, the better one)
    llm_speculative: str = "ngram"
    llm_draft_model: str = ""  # a bundled name or path of the same vocabulary as llm_model
    # embedded engine: tokens per KV block, the prefix cache's grain. A turn's prompt reuses
    # the last one's KV up to its last whole block, so the engine's 16 recomputed up to 15
    # tokens of the last answer before each turn's first token; 4 at most 3, at no cost
    # measured to decode or long prefill (docs/benchmarks.md, issue 48)
    llm_block_size: int = 4
    # voice sessions: each partial transcript of a turn still spoken has the LLM compute
    # the answer's prompt with those words (app/realtime/turns/priming.py), so the answer
    # prefills only what the final words change; off: the answer's prompt waits for them
    llm_prime: bool = True
    asr_model: str = "whisper-tiny.en"
    # a directory of faster-whisper model directories, offered beside the bundled models
    asr_models: str = ""
    # sessions' transcription language (ISO 639-1, e.g. "zh"); empty: detected per turn
    asr_language: str = ""
    tts_voice: str = "piper-en_US-joe-medium"
    # a directory of Piper voices (<voice>.onnx + <voice>.onnx.json), offered as piper-<voice>
    piper_voices: str = ""
    # sessions' voice (e.g. "auto": one of each answer's language); empty: tts_voice
    voice: str = ""
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_response_tokens: int = 128
    temperature: float = 0.0  # greedy by default: the small model answers best that way
    asr_threads: int = 2
    # A clip under 30 s is encoded over a window this long at least (its length + 2 s),
    # not Whisper's padded 30 s (app/speech/asr.py); 30: always the full window.
    asr_min_window_s: float = 12.0
    # Partial transcripts come from a worker process of their own, stopped while a final
    # pass runs (app/speech/partial_passes.py); false: one executor for both, and no
    # worker process (its RSS: 174 MB with tiny.en, 273 MB with whisper-base).
    asr_partials_apart: bool = True
    # Beam width of the final pass over a turn not known to be English (1: greedy; see
    # app/speech/asr.py for what 5 buys and costs).
    asr_final_beam: int = 5
    # How a session's turns end unless it says otherwise: "server_vad" (silence) or
    # "semantic_vad" (the Smart Turn model hears the utterance complete).
    turn_detection: str = "semantic_vad"
    # semantic_vad's eagerness for sessions that do not choose one: "auto" (= "medium":
    # a doubtful pause ends the turn after 1.5 s), "high" (0.8 s: snappier, and a pause
    # longer than that inside a sentence may end the turn), "low" (2.5 s).
    turn_eagerness: str = "auto"
    # Speech resuming this soon after a VAD turn ended continues that turn (see Session).
    turn_merge_window_ms: int = 1500
    # Speech during an answer must last this long to interrupt it (coughs, echo).
    barge_in_hold_ms: int = 300
    # Speech that follows the answer's own audio this closely (band-envelope correlation,
    # see app/realtime/turns/echo.py) is its echo, no barge-in; above 1: no such check.
    echo_correlation: float = 0.7
    # Answer audio is sent at real-time pace, this far ahead of playback, so an
    # interruption leaves little queued on the client.
    audio_lead_ms: int = 300
    warmup: bool = True
    # The remote backend: an OpenAI-compatible server (vLLM, SGLang, another r1voice).
    llm_url: str = ""  # e.g. http://vllm:8000/v1
    llm_api_key: str = ""
    llm_connect_timeout_s: float = 5.0
    llm_read_timeout_s: float = 60.0  # longest silence inside a stream
    llm_context_length: int = 0  # 0: the remote's max_model_len (else 4096)
    llm_send_priority: bool = (
        False  # vLLM accepts `priority` only with --scheduling-policy priority
    )
    llm_opens_reasoning: bool = False  # an R1 remote without a reasoning parser
    # Access (see app/server/access.py and the README's Security section).
    api_key: str = ""  # when set, every route but health probes and the page needs it
    api_keys: str = ""  # more keys, each a tenant's: JSON {"key": "tenant"} (api_key's: default)
    open_metrics: bool = False  # with a key: /metrics and the API docs stay open anyway
    allowed_hosts: str = "*"  # Host names served (comma-separated); serve on loopback: loopback
    allowed_origins: str = ""  # web origins besides the server's own; "*": any
    client_secret_ttl_s: int = 600  # default lifetime of a /v1/realtime/client_secrets key
    # Limits (each refusal is a named error, never a crash).
    max_body_bytes: int = 4 * 1024 * 1024  # an HTTP request body
    max_message_bytes: int = 4 * 1024 * 1024  # one WebSocket message (~60 s of 24 kHz PCM16)
    max_sessions: int = 64  # concurrent Realtime sessions (close 1013 when full)
    # open HTTP/WebSocket connections (503 past it); 0: as many as `ulimit -n` holds
    max_connections: int = 0
    client_requests_per_s: float = 50.0  # per client address (a token bucket); 0: off
    client_burst: int = 100  # requests a client may send at once above its rate
    client_max_sessions: int = 16  # Realtime sessions one client address may hold open
    session_idle_timeout_s: int = 600  # no client event and no answer running: close
    session_max_s: int = 3600  # a session's longest life (OpenAI's is 60 minutes)
    send_stall_s: float = 10.0  # one event's send waiting this long: the client is not reading
    conversation_max_items: int = 1000  # items a client may create in one conversation
    conversation_max_item_chars: int = 100_000
    conversation_max_chars: int = 1_000_000
    # HTTP requests may not ask for a priority below this: lower classes (the engine's
    # high-priority reserve, <= 0) are kept for voice sessions
    http_priority_floor: int = 1
    drain_timeout_s: int = 30  # on SIGTERM: how long open connections may finish
    # WebRTC (POST /v1/realtime/calls): ICE servers as the browser's RTCIceServer[] JSON,
    # e.g. [{"urls": "turn:turn.example.com:3478", "username": "u", "credential": "p"}];
    # empty: host candidates only (a server reachable directly, or on the same network)
    ice_servers: str = ""
    webrtc_connect_timeout_s: float = 20.0  # a call whose ICE/DTLS has not connected: closed
    # an OTLP collector (e.g. http://localhost:4318); empty: OTEL_EXPORTER_OTLP_ENDPOINT or off
    otel_endpoint: str = ""
    trace_content: bool = False  # transcripts, answers and tool data in spans (privacy: off)
    session_reports: int = 50  # recent sessions kept for /v1/r1voice/sessions; 0: none
    record_sessions: bool = False  # every session recorded (stereo WAV + JSON) in recordings_dir
    recordings_dir: str = "recordings"
    recordings_keep: int = 100  # the newest recordings kept; older ones are deleted
    recordings_min_free_mb: int = 100  # less free on its disk: no new recording starts
    recording_max_s: float = 3600.0  # a longer session's recording stops there
    # xiaozhi devices (/xiaozhi/): the Device-Ids (MACs) allowed, comma-separated; empty: any
    xiaozhi_devices: str = ""
    xiaozhi_llm_model: str = "qwen2.5-coder-0.5b-instruct"  # a device session's; empty: server's
    xiaozhi_asr_model: str = "whisper-base"  # a device session's (language detected per turn)
    xiaozhi_voice: str = "auto"  # a device session's voice (auto: one of the answer's language)
    # MCP servers a session's `mcp` tools may name: comma-separated URL prefixes; empty: none
    mcp_allowed_urls: str = ""
    mcp_timeout_s: float = 10.0  # one MCP request (connect, list, call) before it fails
    # stdio MCP servers sessions may name (stdio:<label>): JSON {"label": ["command", "arg"]}
    mcp_stdio_servers: str = ""
    live_delegate: str = "model"  # Live turns delegated: model (its tool), questions, always
    tools_background_after_s: float = 1.5  # a tool call longer: answered when done; 0: wait
    # the address phone providers reach us at (https://...; empty: each webhook's own host)
    public_url: str = ""
    twilio_auth_token: str = ""  # the Twilio account's: its webhooks' signatures are checked
    telnyx_public_key: str = ""  # the Telnyx account's (base64 Ed25519): its webhooks are checked

    def __post_init__(self) -> None:
        if self.llm_backend not in ("embedded", "transformers", "remote"):
            raise ValueError(
                "llm_backend must be 'embedded', 'transformers' or 'remote', "
                f"got {self.llm_backend!r}"
            )
        if self.llm_backend == "remote" and not self.llm_url:
            raise ValueError("the remote LLM backend needs llm_url (R1VOICE_LLM_URL, --llm-url)")
        if self.llm_speculative not in SPECULATIVE_MODES:
            raise ValueError(
                f"llm_speculative (R1VOICE_LLM_SPECULATIVE) must be one of {SPECULATIVE_MODES}, "
                f"got {self.llm_speculative!r}"
            )
        if self.llm_speculative in ("draft", "auto") and not self.llm_draft_model:
            raise ValueError(
                f"llm_speculative={self.llm_speculative!r} needs a draft model: set "
                "R1VOICE_LLM_DRAFT_MODEL (e.g. qwen2.5-coder-0.5b-instruct for the 1.5B)"
            )
        if self.turn_detection not in ("server_vad", "semantic_vad"):
            raise ValueError(
                f"turn_detection must be 'server_vad' or 'semantic_vad', got {self.turn_detection!r}"
            )
        if self.turn_eagerness not in ("low", "medium", "high", "auto"):
            raise ValueError(
                "turn_eagerness must be 'low', 'medium', 'high' or 'auto', "
                f"got {self.turn_eagerness!r} (R1VOICE_TURN_EAGERNESS)"
            )
        if not 1 <= self.asr_min_window_s <= 30:
            raise ValueError(
                f"asr_min_window_s must be within 1-30 s, got {self.asr_min_window_s} "
                "(R1VOICE_ASR_MIN_WINDOW_S)"
            )
        if not 1 <= self.asr_final_beam <= 10:
            raise ValueError(
                f"asr_final_beam must be within 1-10, got {self.asr_final_beam} "
                "(R1VOICE_ASR_FINAL_BEAM)"
            )
        if self.live_delegate not in ("model", "questions", "always"):
            raise ValueError(
                f"R1VOICE_LIVE_DELEGATE: model, questions or always, not {self.live_delegate!r}"
            )
        if self.max_response_tokens <= 0:
            raise ValueError("max_response_tokens must be > 0")
        if self.send_stall_s <= 0:
            raise ValueError("send_stall_s must be > 0 (R1VOICE_SEND_STALL_S)")
        if self.webrtc_connect_timeout_s <= 0:
            raise ValueError(
                "webrtc_connect_timeout_s must be > 0 (R1VOICE_WEBRTC_CONNECT_TIMEOUT_S)"
            )
        self.ice_server_list()  # refused now, at start, with the variable named
        for name in (
            "max_sessions",
            "session_idle_timeout_s",
            "session_max_s",
            "client_burst",
            "llm_block_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 (R1VOICE_{name.upper()})")

    def engine_options(self) -> dict[str, Any]:
        """The embedded engine's settings beyond the model (EngineConfig fields)."""
        draft = {"draft_model": self.llm_draft_model} if self.llm_draft_model else {}
        return {"speculative": self.llm_speculative, "block_size": self.llm_block_size, **draft}

    def ice_server_list(self) -> list[dict[str, Any]]:
        """`ice_servers` parsed and checked: each has `urls` (a string or a list of
        strings), and `username` / `credential` strings when given."""
        if not self.ice_servers.strip():
            return []
        where = "R1VOICE_ICE_SERVERS"
        example = '[{"urls": "stun:stun.example.com:3478"}]'
        try:
            servers = json.loads(self.ice_servers)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where} is not JSON ({exc}); give a list like {example}") from None
        if not isinstance(servers, list):
            raise ValueError(f"{where} must be a JSON list of ICE servers, like {example}")
        for i, server in enumerate(servers):
            if not isinstance(server, dict) or "urls" not in server:
                raise ValueError(f"{where}[{i}] must be an object with `urls`, like {example}")
            urls = server["urls"]
            urls = [urls] if isinstance(urls, str) else urls
            if not (isinstance(urls, list) and urls and all(isinstance(u, str) for u in urls)):
                raise ValueError(f"{where}[{i}].urls must be a URL or a list of URLs")
            bad = [u for u in urls if not u.startswith(("stun:", "stuns:", "turn:", "turns:"))]
            if bad:
                raise ValueError(f"{where}[{i}].urls: {bad[0]!r} is no stun:/turn: URL")
            for key in ("username", "credential"):
                if key in server and not isinstance(server[key], str):
                    raise ValueError(f"{where}[{i}].{key} must be a string")
            unknown = set(server) - {"urls", "username", "credential", "credentialType"}
            if unknown:
                raise ValueError(f"{where}[{i}] has unknown fields: {sorted(unknown)}")
        return servers

    def remote_llm_options(self) -> dict[str, Any]:
        """The remote backend's options (empty for the other backends)."""
        if self.llm_backend != "remote":
            return {}
        return {
            "url": self.llm_url,
            "api_key": self.llm_api_key or None,
            "connect_timeout_s": self.llm_connect_timeout_s,
            "read_timeout_s": self.llm_read_timeout_s,
            "context_length": self.llm_context_length or None,
            "send_priority": self.llm_send_priority,
            "opens_reasoning": self.llm_opens_reasoning,
        }

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Defaults, then R1VOICE_* environment variables, then explicit overrides."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = os.environ.get(f"R1VOICE_{f.name.upper()}")
            if raw is None:
                continue
            if f.type in ("bool", bool):
                values[f.name] = raw.strip().lower() in ("1", "true", "yes", "on")
            elif f.type in ("int", int):
                values[f.name] = int(raw)
            elif f.type in ("float", float):
                values[f.name] = float(raw)
            else:
                values[f.name] = raw
        values.update(overrides)
        return cls(**values)
