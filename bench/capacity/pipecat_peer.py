"""The Pipecat peer of `bench capacity --peer pipecat`, on r1voice's models: llama.cpp's
OpenAI-compatible server (`llama-cpp-python[server]`, which `make test` installs) on the
same GGUF, and the Pipecat pipeline (bench/capacity/pipecat_bot.py) in its own environment
(`make bench-pipecat`) with the same faster-whisper directory and Piper voice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.kit.log import log

ROOT = Path(__file__).resolve().parents[2]
PIPECAT_PYTHON = ROOT / ".venv-pipecat" / "bin" / "python"


class PeerUnavailable(RuntimeError):
    """The peer cannot run here; the message says what to install."""


def models(llm_model: str, asr_model: str, voice: str) -> dict[str, Path]:
    """The files both systems load: the GGUF, the Whisper directory, the Piper voice."""
    from app.catalog import registry
    from bench.engine.peers import gguf_path

    gguf = gguf_path(llm_model)
    if gguf is None:
        raise PeerUnavailable(f"{llm_model} has no GGUF file for llama.cpp to serve")
    return {
        "gguf": gguf,
        "whisper": registry.locate(asr_model, "asr"),
        "voice": registry.locate(voice, "tts"),
    }


class PipecatPeer:
    """Both processes of the peer; `url` is what `PipecatConn` connects to."""

    def __init__(
        self,
        llm_model: str,
        asr_model: str,
        voice: str,
        instructions: str,
        log_prefix: str | None = None,
    ) -> None:
        import importlib.util

        if not PIPECAT_PYTHON.exists():
            raise PeerUnavailable(f"{PIPECAT_PYTHON} is missing: run `make bench-pipecat`")
        if importlib.util.find_spec("llama_cpp") is None:
            raise PeerUnavailable("llama-cpp-python is not installed: run `make llama-cpp`")
        self.llm_model = llm_model
        self.files = models(llm_model, asr_model, voice)
        self.instructions = instructions
        self.llm_port, self.bot_port = _free_port(), _free_port()
        self.procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Any] = []
        self.log_prefix = log_prefix  # keep each process's output in <prefix>.<name>.log

    @property
    def url(self) -> str:
        return f"pipecat+ws://127.0.0.1:{self.bot_port}/ws"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def start(self, timeout_s: float = 300.0) -> float:
        """Start llama.cpp's server, then the bot; seconds until both answer.

        llama-cpp-python's server runs one completion at a time, and by default a new
        request cuts the one streaming (`interrupt_requests`): one session's question
        left another's answer empty. Queued instead, as anyone serving several users
        would set it."""
        import time

        t0 = time.monotonic()
        self._spawn(
            "llama-cpp",
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.files["gguf"]),
             "--model_alias", self.llm_model, "--host", "127.0.0.1",
             "--port", str(self.llm_port), "--n_threads", "2", "--n_ctx", "4096",
             "--interrupt_requests", "False", "--verbose", "False"],
        )  # fmt: skip
        _wait_http(f"http://127.0.0.1:{self.llm_port}/v1/models", "llama.cpp's server",
                   self.procs[-1], timeout_s)  # fmt: skip
        self._spawn(
            "pipecat",
            [str(PIPECAT_PYTHON), str(ROOT / "bench" / "capacity" / "pipecat_bot.py"),
             "--port", str(self.bot_port), "--llm-url", f"http://127.0.0.1:{self.llm_port}/v1",
             "--llm-model", self.llm_model, "--whisper", str(self.files["whisper"]),
             "--piper-voice", str(self.files["voice"]), "--instructions", self.instructions],
        )  # fmt: skip
        _wait_http(f"http://127.0.0.1:{self.bot_port}/health", "the Pipecat bot",
                   self.procs[-1], timeout_s)  # fmt: skip
        return time.monotonic() - t0

    def _spawn(self, name: str, command: list[str]) -> None:
        import tempfile

        log(f"starting the peer: {command[0]} {' '.join(command[1:3])} ...")
        out: Any = (
            open(f"{self.log_prefix}.{name}.log", "wb")  # noqa: SIM115 (closed in stop())
            if self.log_prefix
            else tempfile.TemporaryFile()  # noqa: SIM115
        )
        self._logs.append(out)
        self.procs.append(subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=out))

    def stop(self) -> dict[str, Any]:
        """Stop both; each one's exit code (a negative one is the signal that ended it)."""
        codes = {}
        for name, proc in zip(("llama.cpp", "pipecat"), self.procs, strict=False):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=15)
            codes[name] = proc.returncode
        for out in self._logs:
            out.close()
        return {"exit_codes": codes}


def _wait_http(url: str, name: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    import time
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise PeerUnavailable(f"{name} exited ({proc.returncode}) before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise PeerUnavailable(f"{url} did not answer within {timeout_s:.0f} s")
        time.sleep(0.3)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
