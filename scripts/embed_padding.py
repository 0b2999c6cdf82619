"""How much of MiniLM's work is padding: an index's passages in the order the sync wrote them, cut into
groups of each size, each group ordered as sentence-transformers orders a call (by characters) or as
the embedder does (by wordpieces, ``localrag.embed.longest_first``), then into batches padded to their
longest text. Prints the wordpieces computed per real wordpiece ([CLS] and [SEP] counted in both).

    .venv/bin/python scripts/embed_padding.py DB [--groups 256,1024,2048] [--batch 32]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from localrag.embed import MiniLMEmbedder, longest_first
from localrag.ingest.chunker import Chunk
from localrag.store import Store

SPECIAL = 2  # [CLS] and [SEP]


def embed_texts(db: str) -> list[str]:
    store = Store.open_for_reading(db)
    try:
        passages = store.docs.passages(store.docs.all_passage_ids())
    finally:
        store.close()
    return [Chunk(p.text, p.heading, p.start_line, p.end_line, 0).embed_text for p in passages]


def computed(lengths: Sequence[int], keys: Sequence[int], group: int, batch: int) -> int:
    """Wordpieces the forward passes compute: each group ordered by ``keys``, longest first, each batch
    padded to its longest text."""
    total = 0
    for start in range(0, len(lengths), group):
        part = lengths[start:start + group]
        ordered = [part[i] for i in longest_first(keys[start:start + group])]
        total += sum(max(ordered[b:b + batch]) * len(ordered[b:b + batch]) for b in range(0, len(ordered), batch))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--groups", default="256,1024,2048")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    texts = embed_texts(args.db)
    count, window = MiniLMEmbedder().window_counter()
    lengths = [min(n, window) + SPECIAL for n in count(texts)]
    chars = [len(t) for t in texts]
    real = sum(lengths)
    print(f"{len(texts):,} passages, {real:,} wordpieces with [CLS]/[SEP]")
    for group in (int(g) for g in args.groups.split(",")):
        by_chars = computed(lengths, chars, group, args.batch)
        by_pieces = computed(lengths, lengths, group, args.batch)
        print(f"group {group:>5}: by characters {by_chars / real:.3f} x, by wordpieces {by_pieces / real:.3f} x")


if __name__ == "__main__":
    main()
