"""The servers the serve bench compares, each started as its own process on loopback
with the same model, and the model name each answers to:

- ``r1voice``: `r1voice serve` (our engine, the product's defaults: int8, priority);
- ``llama.cpp``: llama-cpp-python's server (`python -m llama_cpp.server`) on the
  model's bundled GGUF (Q4_K_M);
- ``vllm``: vLLM's OpenAI server from `.venv-vllm` (`make bench-vllm`), on the model's
  directory in bf16, its CPU default.

A server that does not start is reported as such (`ServerFailed`, with its log's tail).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
TARGETS = ("r1voice", "llama.cpp", "vllm")
START_TIMEOUT_S = 600.0


class ServerFailed(RuntimeError):
    """A server did not start or could not be set up; the message says why."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _command(target: str, model: str, port: int, threads: int) -> tuple[list[str], dict[str, str]]:
    from engine import bundled_gguf_path, bundled_llm_dir

    if target == "r1voice":
        command = [sys.executable, "-m", "app.cli", "serve", "--port", str(port)]
        # a load test sends from one address, with no Realtime session
        env = {"R1VOICE_CLIENT_REQUESTS_PER_S": "0", "R1VOICE_LLM_MODEL": model}
        return command, env
    if target == "llama.cpp":
        gguf = bundled_gguf_path(model)
        if gguf is None or not gguf.exists():
            raise ServerFailed(f"llama.cpp: no GGUF bundled for {model}")
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
        command += ["--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads)]
        # its server runs one request at a time (no slots); by default a new request
        # interrupts the one streaming, which a load test would count as failed
        command += ["--interrupt_requests", "False"]
        return [*command, "--model_alias", model], {}
    if target == "vllm":
        if not VLLM_PYTHON.exists():
            raise ServerFailed("vllm: .venv-vllm is missing; run `make bench-vllm` first")
        command = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server"]
        command += ["--model", str(bundled_llm_dir(model)), "--served-model-name", model]
        command += ["--port", str(port), "--host", "127.0.0.1", "--max-model-len", "4096"]
        env = {
            "VLLM_CPU_KVCACHE_SPACE": "2",  # GiB of KV cache
            # every core this process may use, as the other servers do ("auto" keeps one
            # for its front end)
            "VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, sorted(os.sched_getaffinity(0)))),
            "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        }
        return command, env
    raise ServerFailed(f"unknown server {target!r}; use one of {', '.join(TARGETS)}")


class Server:
    """One target's process: `start()` until its /v1/models answers, `stop()`."""

    def __init__(self, target: str, model: str, threads: int) -> None:
        self.target, self.model, self.threads = target, model, threads
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def served_model(self) -> str:
        return "r1voice" if self.target == "r1voice" else self.model

    def start(self) -> float:
        """Starts it; the seconds until it answered."""
        command, env = _command(self.target, self.model, self.port, self.threads)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        started = time.monotonic()
        self.proc = subprocess.Popen(
            command, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **env}
        )
        ready = "/v2/health/ready" if self.target == "r1voice" else "/v1/models"
        while time.monotonic() - started < START_TIMEOUT_S:
            if self.proc.poll() is not None:
                raise ServerFailed(f"{self.target} exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.base_url + ready, timeout=5) as response:
                    if response.status == 200:
                        return round(time.monotonic() - started, 1)
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        raise ServerFailed(f"{self.target} did not answer within {START_TIMEOUT_S:.0f} s")

    def tail(self, lines: int = 20) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
