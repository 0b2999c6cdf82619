"""The multilingual notes set: questions in German, Spanish, French and Chinese over the translated
tldr-pages, and their English twins (bench_data/tldr-multilingual/README.md).

One index over a layout of the tldr-pages folder, read as several question sets ("views"):
each language's questions with its translated page as gold, the same questions with the
English page of the same file name counting as well (a cross-lingual hit), and the English
twins over the English pages (the control).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from localrag_bench.data import BenchDataError, Dataset
from localrag_bench.notes_set import note_paths

LANGUAGES = ("de", "es", "fr", "zh")
ENGLISH_FOLDER = "pages"
LAYOUTS = ("parallel", "full")
VIEW_PREFIX = "tldr-ml"


def language_folder(lang: str) -> str:
    return ENGLISH_FOLDER if lang == "en" else f"{ENGLISH_FOLDER}.{lang}"


def layout_paths(root: Path, layout: str) -> list[str]:
    """The notes of the tldr-pages folder ``root`` a layout indexes (paths relative to ``root``).

    "parallel": the pages present in the English folder and in each of the four translated ones,
    in all five; "full": every page of the four translated folders and the English page of each of
    their file names."""
    if layout not in LAYOUTS:
        raise BenchDataError(f"unknown layout {layout!r}; choose from: {', '.join(LAYOUTS)}")
    names = {lang: set(_pages(root, language_folder(lang))) for lang in ("en", *LANGUAGES)}
    if layout == "parallel":
        shared = set.intersection(*names.values())
        chosen = {lang: shared for lang in names}
    else:
        translated = set.union(*(names[lang] for lang in LANGUAGES))
        chosen = {**{lang: names[lang] for lang in LANGUAGES}, "en": names["en"] & translated}
    return sorted(f"{language_folder(lang)}/{name}" for lang, kept in chosen.items() for name in kept)


def _pages(root: Path, folder: str) -> list[str]:
    path = root / folder
    if not path.is_dir():
        raise BenchDataError(f"{path} not found: the tldr-pages folder needs {folder}/")
    return note_paths(path)


@dataclass(frozen=True)
class View:
    """One question set read off the shared index."""

    lang: str  # the questions' language ("en": the English twins)
    cross: bool = False  # the English page of the gold's file name counts as a hit too

    @property
    def name(self) -> str:
        return f"{VIEW_PREFIX} {self.lang}" + ("+en" if self.cross else "")


VIEWS = (*(View(lang) for lang in LANGUAGES), *(View(lang, cross=True) for lang in LANGUAGES), View("en"))


def view_dataset(base: Dataset, view: View) -> Dataset | None:
    """``base`` (every question, the layout's notes) narrowed to ``view``'s questions; None when the
    split left it none. In a cross view every English page is read as its translation's doc id, so
    either one found is the gold note found (and found once)."""
    questions = [q for q in base.questions if q.lang == view.lang]
    if not questions:
        return None
    note_ids = base.note_ids
    if view.cross:
        prefix = f"{language_folder(view.lang)}/"
        note_ids = dict(note_ids)
        for path, doc_id in base.note_ids.items():
            if path.startswith(prefix):
                english = f"{ENGLISH_FOLDER}/{path[len(prefix):]}"
                if english in note_ids:
                    note_ids[english] = doc_id
    return dataclasses.replace(base, name=view.name, questions=questions, note_ids=note_ids)


def view_datasets(base: Dataset) -> list[Dataset]:
    return [d for d in (view_dataset(base, v) for v in VIEWS) if d is not None]
