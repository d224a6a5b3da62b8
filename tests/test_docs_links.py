"""Every relative link of the README and of docs/ points at a file that exists, and every ``#anchor`` at a
heading of the page it names (GitHub's anchor rules)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text: str) -> str:
    """The text with fenced code blocks, inline code spans and HTML comments blanked out (lines kept)."""
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m[0]), text, flags=re.S)
    out, in_code = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
            out.append("")
        elif in_code:
            out.append("")
        else:
            out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m[0]), line))
    return "\n".join(out)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text lower-cased, everything but letters, digits,
    spaces, hyphens and underscores dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link is its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(\*\*|__|\*)(.+?)\1", r"\2", text)  # emphasis markers
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor on the page; a repeated one gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if FENCE.match(line):
            in_code = not in_code
            continue
        m = None if in_code else HEADING.match(line)
        if m:
            base = anchor(m[2])
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """Every link and image target on the page with its line (a link's text may run over lines)."""
    text = prose(path.read_text(encoding="utf-8"))
    found = sorted([*LINK.finditer(text), *HTML_LINK.finditer(text)], key=lambda m: m.start())
    return [(text.count("\n", 0, m.start()) + 1, m[1]) for m in found]


def broken(path: Path) -> list[str]:
    bad = []
    for n, target in links(path):
        if SCHEME.match(target):
            continue  # http(s), mailto: not checked here
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{n}: {target}"
        if not dest.is_relative_to(ROOT):
            bad.append(f"{where}: outside the repository")
        elif not dest.exists():
            bad.append(f"{where}: no such file")
        elif fragment and dest.suffix == ".md" and unquote(fragment) not in anchors(dest):
            bad.append(f"{where}: no heading with that anchor in {dest.relative_to(ROOT)}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_the_docs_have_links_to_check() -> None:
    assert len(PAGES) > 10
    readme = [t for _, t in links(ROOT / "README.md")]
    assert "docs/concepts.md" in readme and "docs/commands/README.md" in readme
    every = {(p, t) for p in PAGES for _, t in links(p)}
    assert any("#" in t and not t.startswith("#") for _, t in every)  # cross-page anchors are checked too


def test_anchor_follows_githubs_rules() -> None:
    assert anchor("`g6 es mapping|search|count|get`") == "g6-es-mappingsearchcountget"
    assert anchor("Reports a person can read: `--html`") == "reports-a-person-can-read---html"
    assert anchor("The examples, and the one command their site needs") == \
        "the-examples-and-the-one-command-their-site-needs"
    assert anchor("The trust model: what a key holder can do unseen") == \
        "the-trust-model-what-a-key-holder-can-do-unseen"
    assert anchor("Verify `G6_HOME` [here](x.md) **now** — é") == "verify-g6_home-here-now--é"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Same\n\n## Same\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text("# Top\n\n[ok](docs/a.md#same-1) [ok](#top) [web](https://x.org/#nope) `[code](nope.md)`\n"
                    "[gone](docs/b.md) [bad anchor](docs/a.md#same-2) [self](#nowhere)\n"
                    "```\n[in a block](nope.md)\n```\n<!-- [hidden](nope.md) -->\n[a link over\ntwo lines](c.md)\n",
                    encoding="utf-8")
    assert broken(page) == ["README.md:4: docs/b.md: no such file",
                            "README.md:4: docs/a.md#same-2: no heading with that anchor in docs/a.md",
                            "README.md:4: #nowhere: no heading with that anchor in README.md",
                            "README.md:9: c.md: no such file"]
