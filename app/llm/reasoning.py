"""Separate DeepSeek-R1 reasoning (`<think>...</think>`) from the answer, while streaming.

R1 models write their chain of thought first; it is shown to the client as reasoning
and never spoken. The R1-Distill chat template may already open the block in the
prompt (it ends with `<think>\\n`), so the splitter can start inside it. Tags split
across deltas are handled by holding back any suffix that could begin a tag.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """push(text) -> [(kind, text)] with kind "reasoning" or "content", in order."""

    def __init__(self, starts_in_reasoning: bool = False) -> None:
        self.in_reasoning = starts_in_reasoning
        self._held = ""
        self._seen_content = False

    def push(self, text: str) -> list[tuple[str, str]]:
        buf = self._held + text
        self._held = ""
        out: list[tuple[str, str]] = []
        while buf:
            tag = CLOSE if self.in_reasoning else OPEN
            index = buf.find(tag)
            if index >= 0:
                self._add(out, buf[:index])
                buf = buf[index + len(tag) :]
                self.in_reasoning = not self.in_reasoning
                if not self.in_reasoning:
                    buf = buf.lstrip()  # the answer usually starts after a blank line
                continue
            keep = _partial_tag_suffix(buf, tag)
            self._add(out, buf[: len(buf) - keep])
            self._held = buf[len(buf) - keep :]
            break
        return out

    def flush(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._add(out, self._held)
        self._held = ""
        return out

    def _add(self, out: list[tuple[str, str]], text: str) -> None:
        if not text:
            return
        kind = "reasoning" if self.in_reasoning else "content"
        if kind == "content" and not self._seen_content:
            text = text.lstrip()
            if not text:
                return
            self._seen_content = True
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0
