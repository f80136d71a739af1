"""What a session's MCP tools may do: which server URLs they may name (a client must not
make the server fetch arbitrary URLs), how long one request may take, how many tools one
server may offer."""

from __future__ import annotations

from dataclasses import dataclass

from app.settings import Settings


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
        )

    def check(self, url: str) -> None:
        if not url.startswith(("http://", "https://")):
            raise McpRefused(f"the MCP server_url must be an http(s) URL, not {url!r}")
        if not any(url.startswith(prefix) for prefix in self.allowed_urls):
            allowed = ", ".join(self.allowed_urls) or "none"
            raise McpRefused(
                f"the MCP server_url {url!r} is not allowed on this server (allowed prefixes: "
                f"{allowed}); its operator may add it to R1VOICE_MCP_ALLOWED_URLS"
            )
