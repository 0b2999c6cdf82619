"""The folders a question names (text/folders.py): a list of their passages in the `graph` fusion, and
a note's folders counted as what it is about by the abstention rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from localrag.answer.abstain import names_without_note
from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.records import Passage, Retrieval
from localrag.text.folders import MAX_NAMED, NamedFolder, folders_of, named_folders

COUNTS = {"common": 62, "linux": 27, "windows": 4, "osx": 5, "cisco-ios": 1, "to": 1}


def test_a_question_names_a_folder_by_its_whole_words():
    assert named_folders("How many pings does ping send on Windows?", COUNTS, 100) == \
        [NamedFolder("windows", ("windows",), 0.04)]
    assert named_folders("How do I save a Cisco IOS router's configuration?", COUNTS, 100)[0].paths == ("cisco-ios",)
    assert named_folders("How do I save a Cisco router's configuration?", COUNTS, 100) == []  # not all its words
    assert named_folders("How do I split a tmux window?", COUNTS, 100) == []  # "window" is not "windows"
    assert named_folders("How do I go to the parent folder?", COUNTS, 100) == []  # a function word names nothing


def test_the_rarest_folders_come_first_and_a_few_at_most():
    named = named_folders("on common linux, osx and windows", COUNTS, 100)
    assert [f.name for f in named] == ["windows", "osx", "linux"][:MAX_NAMED]
    assert named[0].rarity == pytest.approx(0.96)
    assert named_folders("on windows", COUNTS, 0) == []


def test_folders_of_one_name_are_one_name():
    # translated pages keep the same platform folders: "on Linux" names all of them, counted together
    counts = {"pages": 60, "pages/linux": 20, "pages.de": 40, "pages.de/linux": 15, "linux": 5, "linux/linux": 2}
    (named,) = named_folders("How do I add a route on Linux?", counts, 100)
    assert named.paths == ("linux", "pages.de/linux", "pages/linux")  # linux/linux lies in linux/
    assert named.share == pytest.approx(0.40)


def test_a_nested_folder_is_named_by_its_own_name():
    counts = {"Projects": 3, "Projects/Acme Corp": 2}
    assert [f.paths for f in named_folders("When is the Acme Corp launch?", counts, 10)] == [("Projects/Acme Corp",)]
    assert folders_of("Projects/Acme Corp/launch.md") == ["Projects", "Acme Corp"]
    assert folders_of("top.md") == []


PING = ("# ping\n\n> Send ICMP ECHO_REQUEST packets to network hosts.\n\n"
        "- Ping a host a limited number of times:\n\n`ping -c {{count}} {{host}}`\n")
WINDOWS_PING = ("# ping\n\n> Send echo requests to a machine on the network.\n\n"
                "- Send a given count of requests:\n\n`ping -n {{count}} {{host}}`\n")


def _write(folder: Path, notes: dict[str, str]) -> Path:
    for name, text in notes.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def platforms(tmp_path: Path, embedder):
    """Command pages in common/, linux/ and windows/: the common page is closer in words to the question."""
    notes = {"common/ping.md": PING, "windows/ping.md": WINDOWS_PING}
    notes |= {f"common/tool{i}.md": f"# tool{i}\n\n> Tool {i} copies files.\n\n- Copy a file:\n\n`tool{i} a b`\n"
              for i in range(12)}
    notes |= {f"linux/util{i}.md": f"# util{i}\n\n> Util {i} lists disks.\n\n- List disks:\n\n`util{i} -l`\n"
              for i in range(6)}
    index = Index(load_settings(_write(tmp_path / "pages", notes), env={}), embedder)
    index.sync()
    yield index
    index.close()


QUESTION = "How do I ping a host a limited number of times on Windows?"


def test_notes_per_folder_counts_subfolders_and_follows_writes(platforms, tmp_path):
    docs = platforms.store.docs
    assert docs.notes_per_folder() == {"common": 13, "linux": 6, "windows": 1}
    _write(tmp_path / "pages", {"windows/sub/ipconfig.md": "# ipconfig\n\n> Show the IP configuration.\n"})
    platforms.sync()
    assert docs.notes_per_folder() == {"common": 13, "linux": 6, "windows": 2, "windows/sub": 1}


def _retrieve(index: Index, question: str, folder_weight: float) -> Retrieval:
    kept = index.settings.graph.fusion_folder
    index.settings.graph.fusion_folder = folder_weight
    try:
        return Assistant(index).retrieve(question, strategy="graph", k=5)
    finally:
        index.settings.graph.fusion_folder = kept


def test_the_named_folders_passages_join_the_fusion(platforms):
    without = _retrieve(platforms, QUESTION, 0.0)
    assert without.passages[0].passage.path == "common/ping.md"  # the closer words win without the folder
    named = _retrieve(platforms, QUESTION, 1.0)
    assert named.passages[0].passage.path == "windows/ping.md"
    assert [s.folders for s in named.trace.steps if s.step == "fusion"] == [("windows",)]


def test_a_question_naming_no_folder_ranks_as_without_the_rule(platforms):
    question = "How do I ping a host a limited number of times?"
    assert [sp.passage.id for sp in _retrieve(platforms, question, 1.0).passages] == \
        [sp.passage.id for sp in _retrieve(platforms, question, 0.0).passages]


def _page(path: str, title: str) -> Passage:
    return Passage(1, 1, path, title, 0, title, f"Something about {title}.", "sha", 1, 1)


def test_a_note_is_about_the_folder_it_lies_in():
    question = "How do I save a Cisco router's running configuration?"
    assert names_without_note(question, [_page("cisco-ios/write.md", "write")]) == ([], 1)
    assert names_without_note(question, [_page("linux/write.md", "write")]) == (["Cisco"], 1)


def test_the_passages_under_a_folder_are_its_own_and_follow_writes(platforms, tmp_path):
    docs = platforms.store.docs

    def paths_under(*folders: str) -> set[str]:
        return {p.path for p in docs.passages(sorted(docs.passage_ids_under(folders)))}

    assert paths_under("windows") == {"windows/ping.md"}
    assert paths_under("linux", "windows/") == {"windows/ping.md"} | {f"linux/util{i}.md" for i in range(6)}
    _write(tmp_path / "pages", {"windowsxp/ver.md": "# ver\n\n> Show the version.\n",
                                "windows/sub/tree.md": "# tree\n\n> Show a folder as a tree.\n"})
    platforms.sync()
    assert paths_under("windows") == {"windows/ping.md", "windows/sub/tree.md"}  # not windowsxp/
