"""What a session's MCP tools may do: which server URLs they may name (a client must not
make the server fetch arbitrary URLs), which stdio servers the operator named (a client
names one by label, `stdio:<label>`, and can never make the server start a command of its
own), how long one request may take, how many tools one server may offer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from app.settings import Settings

STDIO = "stdio:"  # server_url of a stdio server named in R1VOICE_MCP_STDIO_SERVERS
_LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EXAMPLE = '{"clock": ["python", "/srv/mcp/clock_server.py"]}'


class McpRefused(ValueError):
    """A client named an MCP server the settings do not allow."""


@dataclass(frozen=True)
class McpPolicy:
    allowed_urls: tuple[str, ...] = ()  # URL prefixes; none: no MCP server may be used
    timeout_s: float = 10.0  # one request (connect, list a page, call)
    max_tools: int = 128  # more is refused: every tool's schema goes into the prompt
    max_pages: int = 16  # of tools/list: a server paging forever fails
    # a call still running this long goes on in the background: the answer says it is
    # checking and ends, and the result is answered when it comes; None: always wait
    background_after_s: float | None = None
    # stdio servers by label: the command and its arguments (R1VOICE_MCP_STDIO_SERVERS)
    stdio_servers: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"the MCP timeout must be positive, not {self.timeout_s}")

    @classmethod
    def from_settings(cls, settings: Settings) -> McpPolicy:
        prefixes = tuple(p.strip() for p in settings.mcp_allowed_urls.split(",") if p.strip())
        background = settings.tools_background_after_s
        return cls(
            allowed_urls=prefixes,
            timeout_s=settings.mcp_timeout_s,
            background_after_s=background if background > 0 else None,
            stdio_servers=parse_stdio_servers(settings.mcp_stdio_servers),
        )

    def stdio_command(self, url: str) -> tuple[str, ...]:
        """The command that serves `stdio:<label>` (McpRefused if no server has the label)."""
        label = url.removeprefix(STDIO)
        for name, command in self.stdio_servers:
            if name == label:
                return command
        named = ", ".join(name for name, _ in self.stdio_servers) or "none"
        raise McpRefused(
            f"no stdio MCP server is labelled {label!r} on this server (labels: {named}); "
            "its operator may name one in R1VOICE_MCP_STDIO_SERVERS"
        )

    def check(self, url: str) -> None:
        if url.startswith(STDIO):
            self.stdio_command(url)
            return
        if not url.startswith(("http://", "https://")):
            raise McpRefused(
                f"the MCP server_url must be an http(s) URL or stdio:<label>, not {url!r}"
            )
        if not any(url.startswith(prefix) for prefix in self.allowed_urls):
            allowed = ", ".join(self.allowed_urls) or "none"
            raise McpRefused(
                f"the MCP server_url {url!r} is not allowed on this server (allowed prefixes: "
                f"{allowed}); its operator may add it to R1VOICE_MCP_ALLOWED_URLS"
            )


def parse_stdio_servers(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """R1VOICE_MCP_STDIO_SERVERS: a JSON object of labels to commands (lists of strings,
    run without a shell); ValueError naming the variable and what is wrong."""
    if not text.strip():
        return ()
    where = "R1VOICE_MCP_STDIO_SERVERS"
    try:
        servers = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not JSON ({exc}); give an object like {_EXAMPLE}") from None
    if not isinstance(servers, dict):
        raise ValueError(f"{where} must be a JSON object of labels to commands, like {_EXAMPLE}")
    parsed: list[tuple[str, tuple[str, ...]]] = []
    for label, command in servers.items():
        if not _LABEL.match(label):
            raise ValueError(f"{where}: the label {label!r} must be 1-64 of A-Z a-z 0-9 _ -")
        ok = isinstance(command, list) and command and all(isinstance(a, str) for a in command)
        if not ok or not command[0]:
            raise ValueError(
                f"{where}[{label!r}] must be a command and its arguments, a list of strings "
                f"like {_EXAMPLE}"
            )
        parsed.append((label, tuple(command)))
    return tuple(parsed)
