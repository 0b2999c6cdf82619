"""ingest.markdown's shortcuts: no inline parse of a text that cannot hold a link or a #tag, and
block ranges read without the inline pass; each must find exactly what the full parse finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from localrag.ingest import markdown as md

HERE = Path(__file__).parent
NOTES = [HERE / "fixtures" / "vault", HERE.parent / "examples" / "notes",
         HERE.parent.parent / "shared" / "data" / "dendron-vault" / "notes"]

EDGE_CASES = [
    "[text][ref]#tag\n\n[ref]: other.md",  # a tag right after a reference link's ]
    "&#35;tag spelt by an entity",
    "&#91;&#91;entity-link]] and more",
    "see [a](b.md) and [[c|shown]]",
    "`#not-a-tag` in code",
    "# Heading only\n\nbody",
    "E[x]tract a [f]ile (tldr's brackets)",
    "x #real-tag and #another/one",
    "let us know in [#feedback](https://example.com) or _#emphasised_",
    "[t](u)#after-link",
    "![[embedded#part]]",
]


def _full(text: str) -> tuple[list[str], list[md.NoteLink]]:
    runs = md._runs(text)
    return md._tags(runs), md._links(runs)


def _texts() -> list[str]:
    texts = list(EDGE_CASES)
    for folder in NOTES:
        if folder.is_dir():
            texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.rglob("*.md"))[:600]]
    return texts


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_agree(text: str) -> None:
    tags, links = _full(text)
    assert (md.inline_tags(text), md.note_links(text)) == (tags, links)
    assert md._parse_refs(text) == md.InlineRefs(tuple(links), tuple(tags))


def test_real_notes_agree_and_most_skip_the_parse() -> None:
    texts = _texts()
    skipped = 0
    for text in texts:
        for part in text.split("\n\n"):  # passages are parts of notes: paragraphs stand in for them
            assert (md.inline_tags(part), md.note_links(part)) == _full(part), part[:200]
            skipped += not md._may_link(part) and not md._may_tag(part)
    assert skipped > 0


FOOTNOTED = "A claim.[^1]\n\nMore text.\n\n[^1]: The source, with a [link](other.md).\n"


def test_block_ranges_without_the_inline_pass_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts() + [FOOTNOTED]
    fast = [md.parse_markdown(t) for t in texts]
    monkeypatch.setattr(md, "_block_parser", md.parser)
    assert fast == [md.parse_markdown(t) for t in texts]
    assert len(md.parse_markdown(FOOTNOTED).blocks) == 3  # the definition is a block of its own
