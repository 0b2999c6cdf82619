"""Entity names that differ only in their numbers, embedded together.

A note that lists hundreds of ``[[Note 1]]`` … ``[[Note 20000]]`` links, a table of contents of
``Chapter 1`` … ``Chapter 40``, a year of ``[[2024-01-05]]`` daily notes: each name is a new
entity and needed a transformer call of its own, ~1.7 ms of CPU per name on this machine
(all-MiniLM-L6-v2, batches of 256), which made 20,000 links 35–48 s of embedding. Where one call
holds ``SHARED_FAMILY_MIN`` or more names of one *family* (the same name once every run of digits
is read as "#"), ``FAMILY_SAMPLE`` of them, spread over the family, are embedded exactly and every
other member gets their normalised mean: the family's centre, one vector for all of them.

What that costs: a member's vector is its family's centre rather than its own (cosine to its own,
measured on MiniLM: 0.99 for "lanternfish harbour gate 04213", 0.91 for dates, 0.78 for the bare
"note 17", whose number is most of the name), so pseudo-coreference and a nearest-vector lookup
cannot tell the members apart; an exact name still finds its entity (retrieve/ppr.py,
retrieve/neuropath/entities.py). Fewer names of a family in one call are embedded one by one, as
before.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

SHARED_FAMILY_MIN = 32  # members of one family in one call before they share the family's centre
FAMILY_SAMPLE = 8  # members embedded exactly (spread over the family) to find its centre

_DIGITS = re.compile(r"\d+")

Encode = Callable[[list[str]], np.ndarray]


def family_key(name: str) -> str:
    """The name with each run of digits read as "#" ("note #" for "note 17"); "" without a digit."""
    key = _DIGITS.sub("#", name)
    return key if key != name else ""


def shared_families(names: Sequence[str]) -> dict[str, list[int]]:
    """The families with at least SHARED_FAMILY_MIN members among ``names``: key -> positions."""
    groups: dict[str, list[int]] = {}
    for at, name in enumerate(names):
        key = family_key(name)
        if key:
            groups.setdefault(key, []).append(at)
    return {key: at for key, at in groups.items() if len(at) >= SHARED_FAMILY_MIN}


def _sample(positions: list[int], names: Sequence[str]) -> list[int]:
    """FAMILY_SAMPLE positions spread over the family in name order (the same whatever the order given)."""
    ordered = sorted(positions, key=lambda at: names[at])
    picks = np.linspace(0, len(ordered) - 1, min(FAMILY_SAMPLE, len(ordered))).round().astype(int)
    return [ordered[i] for i in dict.fromkeys(picks.tolist())]


def embed_names(names: Sequence[str], encode: Encode) -> np.ndarray:
    """One vector per name, in order: each name's own, except the members of a large family beyond
    its sample, which get the family's centre. One ``encode`` call for everything embedded."""
    names = list(names)
    families = shared_families(names)
    exact = set(range(len(names)))
    samples: dict[str, list[int]] = {}
    for key, positions in families.items():
        samples[key] = _sample(positions, names)
        exact -= set(positions) - set(samples[key])
    order = sorted(exact)
    vectors = np.asarray(encode([names[at] for at in order]), dtype=np.float32)
    if not families:
        return vectors
    out = np.zeros((len(names), vectors.shape[1]), dtype=np.float32)
    out[order] = vectors
    for key, positions in families.items():
        centre = out[samples[key]].astype(np.float64).mean(axis=0)
        centre /= max(float(np.linalg.norm(centre)), 1e-12)
        sampled = set(samples[key])
        out[[at for at in positions if at not in sampled]] = centre.astype(np.float32)
    return out
