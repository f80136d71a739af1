"""The server under test: `python -m app.cli serve` as a subprocess, its readiness, its
shutdown and the problems in its log."""

from __future__ import annotations

import argparse
import re
from typing import Any

from bench.kit.log import log


class Server:
    """`python -m app.cli serve` in a subprocess; output goes to a log file."""

    def __init__(self, args: argparse.Namespace) -> None:
        import sys

        self.port = args.port or _free_port()
        self.command = [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)]
        if args.llm_backend:
            self.command += ["--llm-backend", args.llm_backend]
        llm_model = args.llm_model  # None: the server's default (it speaks Chinese too)
        if llm_model:
            self.command += ["--llm-model", llm_model]
        self.llm_model = llm_model
        turn_detection = getattr(args, "turn_detection", None)
        self.env = {"R1VOICE_TURN_DETECTION": turn_detection} if turn_detection else {}
        eagerness = getattr(args, "eagerness", None)
        if eagerness:
            self.env["R1VOICE_TURN_EAGERNESS"] = eagerness
        if getattr(args, "language", None) == "zh":  # a server set up for Mandarin speakers
            self.env.update(
                R1VOICE_ASR_MODEL="whisper-base", R1VOICE_ASR_LANGUAGE="zh", R1VOICE_VOICE="auto"
            )
        self.log_path = args.server_log
        self.proc: Any = None
        self._log_file: Any = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        import os
        import subprocess
        import tempfile
        import time
        from pathlib import Path

        if self.log_path:
            Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "w+b")  # noqa: SIM115 (closed in stop())
        else:
            self._log_file = tempfile.TemporaryFile()  # noqa: SIM115
        root = Path(__file__).resolve().parents[2]
        log("starting: " + " ".join(self.command))
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.command,
            cwd=root,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )

    def log_tail(self, lines: int = 30) -> str:
        if self._log_file is None:
            return ""
        self._log_file.flush()
        self._log_file.seek(0)
        text = self._log_file.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, dict[str, Any]]:
        import json
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.base + path, timeout=timeout) as reply:
                return reply.status, json.loads(reply.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                body = json.loads(exc.read() or b"{}")
            except ValueError:
                body = {}
            return exc.code, body

    def wait_ready(self, timeout: float) -> float:
        """Seconds from process start to the first 200 of /v2/health/ready."""
        import time

        deadline = self.started_at + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the server exited with code {self.proc.returncode} before it was ready:\n"
                    + self.log_tail()
                )
            try:
                status, body = self.get("/v2/health/ready", timeout=2.0)
            except OSError:  # not listening yet
                status, body = 0, {}
            if status == 200:
                return time.monotonic() - self.started_at
            if body.get("error"):
                raise RuntimeError(f"the server failed to load its models: {body['error']}")
            time.sleep(0.1)
        raise RuntimeError(f"the server was not ready after {timeout:.0f} s:\n" + self.log_tail())

    def stop(self) -> dict[str, Any]:
        """Terminate (SIGTERM: uvicorn shuts down gracefully), wait, kill if it hangs."""
        import subprocess
        import time

        info: dict[str, Any] = {"command": self.command}
        if self.proc is not None:
            t0 = time.monotonic()
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    info["killed"] = True
            info["shutdown_s"] = round(time.monotonic() - t0, 3)
            info["exit_code"] = self.proc.returncode
        if self._log_file is not None:
            text = self.log_tail(lines=100_000)
            problems = [
                line
                for line in text.splitlines()
                if re.search(r"\b(ERROR|CRITICAL|Traceback|Exception)\b", line)
            ]
            info["log_problem_lines"] = problems[:20]
            info["log_problem_count"] = len(problems)
            if self.log_path:
                info["log"] = self.log_path
            self._log_file.close()
            self._log_file = None
        return info


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the `r1voice serve` subprocess a traffic bench starts."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--llm-backend", default=None)
    parser.add_argument("--llm-model", default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    parser.add_argument("--server-log", default=None)


def start_server(args: argparse.Namespace, **env: str) -> tuple[Server, float]:
    """`r1voice serve` with `env` added, ready; returns it and its seconds to ready."""
    server = Server(args)
    # one address plays many clients here: the per-client limits would throttle it
    server.env.update(R1VOICE_CLIENT_REQUESTS_PER_S="0", R1VOICE_CLIENT_MAX_SESSIONS="0", **env)
    server.start()
    try:
        return server, server.wait_ready(args.ready_timeout)
    except BaseException:
        server.stop()
        raise
