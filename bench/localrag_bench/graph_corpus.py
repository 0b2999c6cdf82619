"""A generated corpus with the entity structure of a real vault, for the graph part of `bench scale`.

A fixed "world" of people, places and organisations recurs across files with a
Zipf-like skew (a few are everywhere, most appear a handful of times), plus a long
tail of people named in one or two passages each (about one new entity per passage,
so the entity table grows with the corpus as a real vault's does). Each file is a
note about one of them (its title), of sections of 150-300 word-tokens; sentences
mention two or three entities, and some link to the notes of others, as Markdown
links or ``[[wikilinks]]``. Deterministic for a seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from localrag.ingest.chunker import count_tokens
from localrag_bench import vocab
from localrag_bench.workdir import write_if_changed

PER_FILE = 10
MIN_TOKENS, MAX_TOKENS = 110, 190  # regex count: ~150-250 MiniLM wordpieces, inside its 254 window
_PLACE_FORMS = ("{p}", "North {p}", "{p} Harbour", "Upper {p}", "{p} Valley", "Old {p}")
_ORG_KINDS = ("Historical Society", "Museum", "Choir", "Rowing Club", "Chamber of Commerce", "Printing House",
              "Observatory", "Hospital", "Grammar School", "Cooperative Bank")


_SYLLABLES = ("bram ald cor dun el fen gar hal isen jor kel lum mor nor ost pel quar ros sten tor ul ven wick yar "
              "zel bry cal dar").split()
_ENDINGS = ("ford ley ton wood by stead more field ham worth ridge low mere dale cote").split()
TAIL_SHARE = 0.35  # of person mentions: someone from the long tail (one or two notes mention them)


@dataclass(frozen=True)
class World:
    people: list[str]  # recurring, Zipf-skewed
    places: list[str]
    orgs: list[str]
    tail: list[str]  # one person per passage or so, each named in a few passages only

    @classmethod
    def sized(cls, n_passages: int, rng: random.Random) -> "World":
        combos = [f"{f} {l}" for f in vocab.FIRST_NAMES for l in vocab.LAST_NAMES]
        rng.shuffle(combos)
        people = combos[: max(200, min(len(combos), n_passages // 20))]
        places = [form.format(p=p) for p in vocab.PLACES for form in _PLACE_FORMS]
        rng.shuffle(places)
        orgs = [f"{p} {kind}" for p in vocab.PLACES for kind in _ORG_KINDS] + [o[4:].title() if o.startswith("the ")
                                                                              else o for o in vocab.ORGS]
        rng.shuffle(orgs)
        surnames = sorted({f"{a}{b}{c}".capitalize() for a in _SYLLABLES for b in _SYLLABLES for c in _ENDINGS})
        rng.shuffle(surnames)
        firsts = vocab.FIRST_NAMES
        tail = [f"{firsts[(i * 31) % len(firsts)]} {surnames[i % len(surnames)]}" for i in range(max(100, n_passages))]
        return cls(people, places[: max(60, min(len(places), n_passages // 200))],
                   orgs[: max(40, min(len(orgs), n_passages // 250))], tail)


def _zipf(rng: random.Random, items: list[str]) -> str:
    # rank ~ exp(uniform(0, ln n)) gives P(rank) ~ 1/rank
    return items[min(len(items) - 1, int(math.exp(rng.uniform(0, math.log(len(items))))) - 1)]


@dataclass(frozen=True)
class GraphPassage:
    heading: str
    text: str
    question: str


@dataclass(frozen=True)
class GraphNote:
    name: str  # relative path
    title: str
    passages: list[GraphPassage]

    def text(self) -> str:
        parts = [f"# {self.title}", ""]
        for p in self.passages:
            parts += [f"## {p.heading}", "", p.text, ""]
        return "\n".join(parts)


class _Writer:
    def __init__(self, world: World, rng: random.Random, note_of: dict[str, str], here: str):
        self.w, self.rng, self.note_of, self.here = world, rng, note_of, here
        self.people_named: list[str] = []

    def ref(self, name: str) -> str:
        """The name, as a link to its note one time in four when it has one."""
        target = self.note_of.get(name)
        if target is None or target == self.here or self.rng.random() > 0.25:
            return name
        if self.rng.random() < 0.5:
            return f"[[{name}]]"
        return f"[{name}]({_relative(self.here, target)})"

    def sentence(self, subject: str) -> str:
        r, w = self.rng, self.w
        person = r.choice(w.tail) if r.random() < TAIL_SHARE else _zipf(r, w.people)
        other = _zipf(r, w.people)
        self.people_named.append(person)
        place, org = _zipf(r, w.places), _zipf(r, w.orgs)
        topic = r.choice(list(vocab.TOPICS))
        noun, adj, verb = r.choice(vocab.TOPICS[topic]), r.choice(vocab.ADJECTIVES), r.choice(vocab.VERBS_PAST)
        year, job = r.randint(1850, 2020), r.choice(vocab.PROFESSIONS)
        forms = [
            f"In {year}, {self.ref(person)} {verb} the {adj} {noun} of {self.ref(place)} with {self.ref(org)}.",
            f"{self.ref(subject)} met {self.ref(person)}, a {job} from {self.ref(place)}, while working on {topic}.",
            f"{self.ref(person)} and {self.ref(other)} later {verb} a {noun} for {self.ref(org)} in {self.ref(place)}.",
            f"According to {self.ref(org)}, the {adj} {noun} was moved from {self.ref(place)} around {year}.",
            f"{self.ref(other)} wrote that {self.ref(subject)} had {verb} the {noun} long before {self.ref(person)} did.",
            f"The {noun} is still kept in {self.ref(place)}, where {self.ref(person)} worked as a {job}.",
        ]
        return r.choice(forms)


def _relative(here: str, target: str) -> str:
    return Path("../" * (len(Path(here).parts) - 1)).joinpath(target).as_posix()


def generate_graph_corpus(n_passages: int, seed: int = 11) -> list[GraphNote]:
    rng = random.Random(seed)
    world = World.sized(n_passages, rng)
    n_files = math.ceil(n_passages / PER_FILE)
    subjects = [_zipf(rng, pool) for pool in (world.people, world.places, world.orgs) for _ in range(n_files)]
    rng.shuffle(subjects)
    titles: list[str] = []
    used: dict[str, int] = {}
    for s in subjects[:n_files]:  # a subject with several notes gets "Name (2)": distinct titles
        used[s] = used.get(s, 0) + 1
        titles.append(s if used[s] == 1 else f"{s} ({used[s]})")
    names = [f"vault-{i // 200:03d}/{title.replace(' ', '-').replace('(', '').replace(')', '')}.md"
             for i, title in enumerate(titles)]
    note_of = {t: n for t, n in zip(titles, names)}
    notes: list[GraphNote] = []
    for f, (title, name) in enumerate(zip(titles, names)):
        writer = _Writer(world, rng, note_of, name)
        subject = title.split(" (")[0]
        passages = []
        for i in range(min(PER_FILE, n_passages - f * PER_FILE)):
            target = rng.randint(MIN_TOKENS, MAX_TOKENS)
            sentences: list[str] = []
            writer.people_named.clear()
            while count_tokens(" ".join(sentences)) < target:
                sentences.append(writer.sentence(subject))
            if count_tokens(" ".join(sentences)) > MAX_TOKENS and len(sentences) > 1:
                sentences.pop()
            text = " ".join(sentences)
            heading = f"{subject}: part {i + 1}"
            person = writer.people_named[0] if writer.people_named else subject
            question = f"What did {person} do with {subject}?" if person != subject else f"Who worked with {subject}?"
            passages.append(GraphPassage(heading, text, question))
        notes.append(GraphNote(name, title, passages))
    return notes


def write_graph_corpus(notes_dir: Path, notes: list[GraphNote]) -> int:
    """Write the files that are missing or different; returns how many were written."""
    return sum(write_if_changed(notes_dir / note.name, note.text().encode("utf-8")) for note in notes)
