"""What the browser tests look at: the DOM and the page's `window.r1voice` debug state."""

from __future__ import annotations

import base64
import re
from typing import Any

from playwright.sync_api import Locator, Page, expect

QUESTION = "What is the capital of France?"
# What the small ASR hears of QUESTION, robustly ("capital of France" was once heard as
# "capital of friends"): assert on this, not on exact words.
HEARD = re.compile(r"capital", re.I)
TIMEOUT_MS = 60_000  # generous: two shared CPU cores run ASR, the LLM and TTS


def connected(page: Page) -> None:
    # the status line's state, not its words (the page may be in Chinese)
    expect(page.locator("#status")).to_have_attribute("data-state", "connected", timeout=TIMEOUT_MS)
    expect(page.locator("#talk")).to_be_enabled()
    # the palettes came from /v1/r1voice/components and the cards show the session
    expect(page.locator(".component").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator('[data-slot-value="tts"]')).not_to_have_text("–", timeout=TIMEOUT_MS)


def debug(page: Page) -> dict[str, Any]:
    return page.evaluate("() => window.r1voice")  # type: ignore[no-any-return]


def user_final(page: Page, pattern: str | re.Pattern[str]) -> Locator:
    regex = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.I)
    return page.locator(".msg.user:not(.partial)", has_text=regex)


def assistant(page: Page, pattern: str | re.Pattern[str] = re.compile(r"\w")) -> Locator:
    regex = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.I)
    return page.locator(".msg.assistant .text", has_text=regex)


def responses_done(page: Page, n: int) -> None:
    page.wait_for_function(
        f"() => (window.r1voice.events['response.done'] || 0) >= {n}", timeout=TIMEOUT_MS
    )


def played_more_than(page: Page, samples: int) -> None:
    page.wait_for_function(f"() => window.r1voice.played > {samples}", timeout=TIMEOUT_MS)


def session_value(page: Page, slot: str) -> Locator:
    return page.locator(f'[data-slot-value="{slot}"]')


def notice(page: Page, kind: str) -> Locator:
    return page.locator(f'.notice[data-kind="{kind}"]')


DROP_FILE = """([b64, name, type]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type }));
  const target = document.querySelector("#log");
  for (const kind of ["dragenter", "dragover", "drop"]) {
    target.dispatchEvent(new DragEvent(kind, { dataTransfer: data, bubbles: true, cancelable: true }));
  }
}"""


def drop_file(page: Page, content: bytes, name: str, mime: str) -> None:
    """Drop a file on the page as a user dragging it from their desktop would."""
    page.evaluate(DROP_FILE, [base64.b64encode(content).decode(), name, mime])
