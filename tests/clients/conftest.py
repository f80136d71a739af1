"""Real third-party Realtime clients against a real r1voice socket: helpers to serve an
app (optionally over TLS) on a loopback port and to build scripted backends."""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uvicorn

from app.audio import PROTOCOL_RATE, float_to_pcm16
from tests.conftest import app_with, load_clip
from tests.fakes import ScriptedLLM

# GA is the default dialect, so GA clients use the plain URL (kept as a name so one
# place says so).
GA_QUERY = ""  # GA is the default: a GA client changes only the URL

# An answer long enough (many clauses, several seconds of speech) to be interrupted.
LONG_ANSWER = [f"Sentence number {i} is here, and it goes on for a while. " for i in range(16)]
SHORT_ANSWER = ["The capital ", "of France ", "is Paris."]
# The first phrase of jfk.flac ("And so, my fellow Americans"), to talk over an answer with.
BARGE_IN_S = 3.0
# Where JFK's sentence ends. The breath after it (10.7 s) can still reopen the committed
# turn and cancel its answer when it lasts the barge-in hold (issue 27: reopen only on
# words). The three client tests that sent the whole clip were the ones failing on CI.
SENTENCE_S = 10.4


def speech_pcm(seconds_of_clip: float = SENTENCE_S) -> bytes:
    """jfk.flac (its sentence, or only its first seconds) between silences: the PCM16
    mono 24 kHz that Realtime clients send by default."""
    clip = load_clip("jfk.flac")[: int(seconds_of_clip * PROTOCOL_RATE)]
    silence = np.zeros(PROTOCOL_RATE, np.float32)
    return float_to_pcm16(np.concatenate([silence[: PROTOCOL_RATE // 2], clip, silence, silence]))


def start_uvicorn(
    app: Any,
    make_server: Callable[[uvicorn.Config], uvicorn.Server] = uvicorn.Server,
    **config: Any,
) -> tuple[uvicorn.Server, threading.Thread, str]:
    """`app` under a real uvicorn (or `make_server`'s subclass of it) on a free loopback
    port, started on its own thread; returns the server, the thread, "127.0.0.1:PORT"."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = {"log_level": "warning", "lifespan": "off", **config}
    server = make_server(uvicorn.Config(app, host="127.0.0.1", port=port, **settings))
    thread = threading.Thread(target=server.run, daemon=True, name=f"uvicorn-{port}")
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive(), "uvicorn exited before it started"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    return server, thread, f"127.0.0.1:{port}"


@contextmanager
def serve(
    app: Any, ssl_certfile: Path | None = None, ssl_keyfile: Path | None = None
) -> Iterator[str]:
    """`app` under a real uvicorn on a free loopback port; yields "127.0.0.1:PORT"."""
    server, thread, address = start_uvicorn(
        app,
        ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
        ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
    )
    try:
        yield address
    finally:
        server.should_exit = True
        thread.join(timeout=30)


ScriptedServer = Callable[..., AbstractContextManager[str]]


@pytest.fixture
def scripted_server(shared_components: Any) -> ScriptedServer:
    """`scripted_server(*answers, **serve_kwargs)`: a live server whose LLM replays the
    answers (each a list of deltas) in turn, with the real VAD, ASR and TTS; the context
    manager yields "127.0.0.1:PORT"."""

    @contextmanager
    def start(*answers: list[str], **serve_kwargs: Any) -> Iterator[str]:
        components = dataclasses.replace(shared_components, llm=ScriptedLLM(list(answers)))
        with serve(app_with(components), **serve_kwargs) as address:
            yield address

    return start


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA); returns (cert, key) paths."""
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:  # the openssl command line does the same
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                "-keyout", str(key_path), "-out", str(cert_path),
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
