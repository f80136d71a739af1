"""The repository's own documentation: every path that README.md and docs/*.md name exists.

A reference is a backticked span or a Markdown link target (fenced code blocks are
skipped) that looks like a path in this repository: made only of path characters, and
either holding a `/` (then it ends in `/`, starts with one of the repository's top-level
entries or `..`, or ends in a known extension) or a file name with a known extension,
or `Makefile`. Not references: URLs, `~/...`, absolute paths and API routes
(`/v1/...`), `../shared/...` (beside the repository, not in it), placeholders
(`<model>/...`), globs, and outputs under a gitignored top-level folder
(`bench-results/`). A path resolves against the page's own folder, then the repository
root; a bare name (`inbox.py`, `routes/`: named in its folder's context) may also be any
file or folder of that name in the tree.

Also: every `page.md#heading` link finds its heading, the README links every docs page,
and it stays a page or two; and no page names a path outside the repository (a reader's
checkout has no `../shared/`: a page says what such data is).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXTENSIONS = {
    ".py", ".md", ".js", ".mjs", ".json", ".toml", ".yaml", ".yml", ".sh", ".cpp", ".h",
    ".txt", ".pbtxt", ".html", ".css", ".png", ".cfg", ".ini",
}  # fmt: skip
BARE_NAMES = {"Makefile"}

FENCED = re.compile(r"^\s*```.*?^\s*```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
PATH_CHARS = re.compile(r"[A-Za-z0-9_.\-/]+")


@cache
def _ignored_tops(root: Path) -> frozenset[str]:
    """Top-level folders .gitignore names (`/bench-results/`, `build/`): outputs."""
    gitignore = root / ".gitignore"
    lines = gitignore.read_text().splitlines() if gitignore.exists() else []
    return frozenset(
        line.strip().strip("/")
        for line in lines
        if line.strip().endswith("/") and "*" not in line and "/" not in line.strip().strip("/")
    )


def _is_repo_path(ref: str, root: Path) -> bool:
    if not ref or not PATH_CHARS.fullmatch(ref) or ref.startswith(("/", "../shared")):
        return False  # URLs, ~/..., placeholders, globs, routes, sentences, beside the repo
    name = ref.rstrip("/")
    last = PurePosixPath(name).name
    has_extension = PurePosixPath(last).suffix in EXTENSIONS and not last.startswith(".")
    if "/" not in ref:
        return has_extension or name in BARE_NAMES
    first = name.split("/")[0]
    if first in _ignored_tops(root):
        return False
    folder = ref.endswith("/")  # `docker/`, `web/lib/`: always a folder of ours
    return folder or has_extension or first == ".." or (root / first).exists()


def references(text: str, root: Path = ROOT) -> list[str]:
    """The repository paths a Markdown text names, in order, each once."""
    prose = FENCED.sub("", text)
    spans = CODE_SPAN.findall(prose) + LINK_TARGET.findall(prose)
    found: dict[str, None] = {}
    for span in spans:
        ref = span.strip().split("#", 1)[0]
        if _is_repo_path(ref, root):
            found[ref] = None
    return list(found)


@cache
def _names_in_tree(root: Path) -> frozenset[str]:
    names = set()
    for _folder, dirs, files in os.walk(root):
        dirs[:] = [
            d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")
        ]
        names.update(files, dirs)
    return frozenset(names)


def missing(text: str, folder: Path, root: Path = ROOT) -> list[str]:
    """The references of `text` (a page in `folder`) that name nothing in the repository."""
    absent = []
    for ref in references(text, root):
        if (folder / ref).exists() or (root / ref).exists():
            continue
        if "/" not in ref.rstrip("/") and ref.rstrip("/") in _names_in_tree(root):
            continue
        absent.append(ref)
    return absent


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_page_names_exists(page: Path) -> None:
    absent = missing(page.read_text(), page.parent)
    assert not absent, f"{page.relative_to(ROOT)} names paths that do not exist: {absent}"


OUTSIDE = re.compile(r"(?<![\w.])\.\./[A-Za-z0-9_.\-/]*")


def outside_paths(text: str, folder: Path, root: Path = ROOT) -> list[str]:
    """The `../` paths anywhere in `text` (a page in `folder`), code blocks included, that
    lead out of the repository or to nothing in it (`../shared/...` from docs/ meant the
    folder beside the repository): a reader's checkout has nothing there, so a page says
    what such data is instead of where one machine keeps it."""
    found = []
    for ref in OUTSIDE.findall(text):
        target = (folder / ref).resolve()
        if not target.is_relative_to(root.resolve()) or not target.exists():
            found.append(ref)
    return found


@pytest.mark.parametrize(
    "page",
    sorted({*PAGES, *ROOT.glob("*.md")}),  # RELIABILITY.md too
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_page_names_a_path_outside_the_repository(page: Path) -> None:
    outside = outside_paths(page.read_text(), page.parent)
    assert not outside, f"{page.relative_to(ROOT)} names paths outside the repository: {outside}"


def test_a_path_outside_the_repository_is_reported() -> None:
    text = "See `../shared/data/speech/`, [the readme](../README.md) or ../../etc/hosts\n"
    assert outside_paths(text, ROOT / "docs") == ["../shared/data/speech/", "../../etc/hosts"]
    assert outside_paths(text, ROOT) == [
        "../shared/data/speech/",
        "../README.md",
        "../../etc/hosts",
    ]


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, - for spaces."""
    headings = re.findall(r"^#+ (.+)$", FENCED.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def broken_anchors(text: str, page: Path) -> list[str]:
    """The `file.md#heading` links of `text` (the page at `page`) whose heading is not there."""
    broken = []
    for target in LINK_TARGET.findall(FENCED.sub("", text)):
        path, _, anchor = target.partition("#")
        if not anchor or ":" in path:
            continue
        linked = (page.parent / path) if path else page
        if linked.suffix == ".md" and linked.exists() and anchor not in _anchors(linked):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_a_page_links_exists(page: Path) -> None:
    broken = broken_anchors(page.read_text(), page)
    assert not broken, f"{page.relative_to(ROOT)} links headings that do not exist: {broken}"


def test_the_readme_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    linked = set(LINK_TARGET.findall(readme))
    unlinked = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in linked]
    assert not unlinked, f"README.md does not link these docs pages: {unlinked}"


def test_the_readme_stays_a_page_or_two() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines < 250, f"README.md has {lines} lines: move details into docs/"


def test_references_are_repo_paths_only() -> None:
    text = """
The engine is `engine/llm.py` (see [the design](docs/architecture.md#layers)), set up by
the `Makefile`; `inbox.py` stamps messages. Not paths: `~/.cache/r1voice`, `/v1/realtime`,
`GET /v2/health/ready`, `../shared/DESIGN.md`, `<model>/quantized/`, `web/*-worklet.js`,
`deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B`, `audio/pcm`, [a site](https://example.com/a.md),
`bench-results/engine.json`, `session.update`, `.gguf`.

```bash
cat engine/fenced_away.py
```
"""
    # code spans first, then link targets
    assert references(text) == ["engine/llm.py", "Makefile", "inbox.py", "docs/architecture.md"]


def test_a_missing_path_is_reported() -> None:
    text = (
        "See `app/cli.py`, `engine/no_such_module.py`, [gone](docs/no-such-page.md), "
        "`no_such_file.py`, `tests/`, `no_such_folder/` and `tests/no_such_dir` for more."
    )
    assert missing(text, ROOT) == [
        "engine/no_such_module.py",
        "no_such_file.py",
        "no_such_folder/",
        "tests/no_such_dir",
        "docs/no-such-page.md",
    ]


def test_a_missing_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n\n## Layers, and the rule imports follow\n")
    text = "[a](guide.md#layers-and-the-rule-imports-follow), [b](guide.md#no-such), [c](#guide)"
    assert broken_anchors(text, tmp_path / "page.md") == ["guide.md#no-such"]
