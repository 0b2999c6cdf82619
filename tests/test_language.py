"""The answer layer's English rules apply to English questions only: another language's question gets
the evidence unit that answers it, quoted, with no model call, and abstention by cosine still works."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kg_helpers import write_notes
from localrag.answer.abstain import check_evidence, script_names
from localrag.answer.evidence import EvidenceSentence, linked_passages, prefer_language
from localrag.api import Assistant, Index
from localrag.config import AnswerSettings, load_settings
from localrag.language import is_english, question_language, text_language
from localrag.records import Passage

NOTES = {
    "tar.md": "# tar\n\n> Archivierungswerkzeug.\n\n- Ein Archiv in einen anderen Ordner entpacken:\n\n"
              "`tar xf pfad/zum/archiv.tar --directory pfad/zum/ordner`\n",
    "cal.md": "# cal\n\n> Zeigt einen Kalender an.\n\n- Einen Kalender anzeigen, in dem die Woche am Montag beginnt:\n\n"
              "`cal --monday`\n",
    "git-branch.md": "# git branch\n\n> Branches verwalten.\n\n- Den Namen des aktuellen Branches anzeigen:\n\n"
                     "`git branch --show-current`\n",
}


@pytest.mark.parametrize("question, language", [
    ("Wie entpacke ich ein Archiv in einen anderen Ordner?", "de"),
    ("¿Cómo averiguo en qué rama de mi repositorio estoy ahora mismo?", "es"),
    ("Comment revenir rapidement à la branche sur laquelle j'étais juste avant ?", "fr"),
    ("怎样用 sudo 重新执行上一条命令？", "zh"),
    ("tar の使い方は？", "ja"),
    ("How do I extract a tar archive into another folder?", "en"),
    # names mislead a character n-gram model; left out, the function words say English
    ("Who is older, Madeleine Robinson or Dušan Poliačik?", "en"),
    ("Was Angus Wagner or Juan Carlos Falcón born first?", "en"),
])
def test_the_language_of_a_question(question, language):
    assert question_language(question) == language


def test_the_names_rule_reads_english_capitalisation_only():
    settings = AnswerSettings(abstain_below=0.2, abstain_unnamed_below=0.9)
    german = "Wie zeige ich einen Kalender mit dem Montag als Wochenbeginn an?"  # every noun capitalised
    assert check_evidence(german, [], 0.5, settings).weak  # read as English, "Kalender", "Montag" are names
    assert not check_evidence(german, [], 0.5, settings, english=False).weak
    assert check_evidence(german, [], 0.1, settings, english=False).weak  # the cosine rule still applies


@pytest.mark.parametrize("question, names", [
    ("怎么在 Linux 上创建并启用交换（swap）文件？", ["Linux", "swap"]),  # Latin letters in Chinese text
    ("怎样给一个 PDF 文件加上打开密码？", ["PDF"]),
    ("Comment fusionner plusieurs fichiers PDF en un seul ?", ["PDF"]),
    ("¿Cómo uso docker-compose con la opción --detach?", ["--detach"]),  # a key of code; a hyphen is no acronym
    ("Wie sehe ich, wer die E-Mail-Adresse im Ordner geändert hat?", []),  # capitalised nouns are not names
])
def test_the_names_a_question_in_any_language_gives_by_its_script(question, names):
    assert script_names(question) == names


def test_a_question_not_in_english_abstains_on_an_acronym_or_latin_word_no_note_says():
    settings = AnswerSettings(abstain_below=0.2, abstain_unnamed_below=0.9)
    said = {"Linux": 400, "Festplatte": 0, "Ordner": 0}
    common = lambda n: said.get(n, 0)  # noqa: E731
    check = check_evidence("怎么在 Linux 上创建并启用交换（swap）文件？", [], 0.6, settings, common=common,
                           english=False)
    assert check.weak and "“swap”" in check.reason and "Linux" not in check.reason
    assert check_evidence("Comment fusionner plusieurs fichiers PDF en un seul ?", [], 0.6, settings,
                          common=common, english=False).weak
    said["PDF"] = 3  # a folder that says PDF: the other rules decide
    assert not check_evidence("Comment fusionner plusieurs fichiers PDF en un seul ?", [], 0.6, settings,
                              common=common, english=False).weak
    # a German noun no note says is not a missing name: only the cosine rule reads such a question
    assert not check_evidence("Wie trage ich eine Festplatte in den Ordner ein?", [], 0.6, settings,
                              common=common, english=False).weak


@pytest.fixture(scope="module")
def assistant(tmp_path_factory, embedder):
    folder = write_notes(tmp_path_factory.mktemp("language") / "notes", NOTES)
    missing = folder.parent / "no-such-model.gguf"  # loading it would fail: no answer here may need it
    settings = load_settings(folder, {"db": str(folder.parent / "index.db"), "llm.model": str(missing),
                                      "answer.writer": "model"}, env={})
    index = Index(settings, embedder)
    index.sync()
    yield Assistant(index)
    index.close()


def test_a_german_question_is_answered_by_the_quoted_unit_without_the_model(assistant):
    question = "Wie entpacke ich ein Archiv in einen anderen Ordner?"
    assert not is_english(question)
    answer = assistant.ask(question, strategy="hybrid")
    assert not answer.abstained and answer.picked_by == "quote" and not answer.calls
    assert "--directory" in answer.text
    assert answer.citations[0].cited and answer.citations[0].passage.path == "tar.md"
    assert any("not in English" in n for n in answer.notes)


def test_an_english_question_still_asks_the_writer(assistant):
    # the model writer is the setting: an English question needs the model, which is missing here
    with pytest.raises(Exception, match="no-such-model"):
        assistant.ask("How do I show the current branch?", strategy="hybrid")


@pytest.mark.parametrize("text, language", [
    ("# tar\n\n> Archiving utility.\n> Often combined with a compression method, such as gzip.\n\n"
     "- Extract an archive into a folder:\n\n`tar xf {{path/to/archive.tar}} -C {{path/to/folder}}`\n", "en"),
    ("# tar\n\n> Archivierungswerkzeug.\n> Wird oft mit einer Kompressionsmethode wie gzip kombiniert.\n", "de"),
    ("# dir\n\n> 列出目录的内容。\n> 更多信息：<https://learn.microsoft.com/windows-server/administration>。\n", "zh"),
    ("# ls\n\n- `ls -la`\n", None),  # no prose to tell by
    ("# tar\n\n> Archiving utility.\n", None),  # too few words
])
def test_the_language_of_a_passage_is_read_from_its_prose(text, language):
    assert text_language(text) == language


def _unit(passage_id: int, text: str, score: float, lang_text: str) -> EvidenceSentence:
    passage = Passage(passage_id, passage_id, f"n{passage_id}.md", "tar", 0, "", lang_text, "", 1, 9)
    return EvidenceSentence(text, text, passage, passage_id, 1, "sentence", score, score)


ENGLISH_PAGE = "> Archiving utility, often combined with a compression method such as gzip or bzip2."
GERMAN_PAGE = "> Archivierungswerkzeug, wird oft mit einer Kompressionsmethode wie gzip kombiniert."


def test_units_in_another_language_than_the_question_score_less_where_the_question_s_is_found():
    ranked = [_unit(1, "Ein Archiv entpacken", 0.70, GERMAN_PAGE), _unit(2, "Extract an archive", 0.65, ENGLISH_PAGE)]
    question = "How do I extract an archive?"
    moved = prefer_language(question, ranked, 0.1)
    assert [round(e.score, 2) for e in moved] == [0.60, 0.65]
    assert prefer_language(question, ranked, 0.0) == ranked
    only_german = [ranked[0], _unit(3, "Ein Archiv anlegen", 0.5, GERMAN_PAGE)]
    assert prefer_language(question, only_german, 0.1) == only_german  # none in English: nothing to prefer


def _at(unit: EvidenceSentence, path: str, title: str = "tar") -> EvidenceSentence:
    return replace(unit, passage=replace(unit.passage, path=path, title=title))


def test_a_note_of_the_same_name_is_not_a_second_hop():
    """A sentence that names a title links that note (a bridge), but not a note of its own title and file
    name: in a folder of translations each `tar` page would lift the others above a closer line."""
    english = _at(_unit(1, "Extract an archive with tar", 0.8, ENGLISH_PAGE), "pages/common/tar.md")
    german = _at(_unit(2, "Ein Archiv mit tar entpacken", 0.6, GERMAN_PAGE), "pages.de/common/tar.md")
    other = _at(_unit(3, "Extract with 7z", 0.5, ENGLISH_PAGE), "pages/common/7z.md", "7z")
    ranked = [english, german, replace(english, text="Use tar or 7z", plain="Use tar or 7z", score=0.7)]
    assert linked_passages("How do I extract an archive?", ranked + [other]) == {3}


def test_a_note_of_the_same_title_in_another_file_is_a_second_hop():
    """The singer's article names "Madonna", the title of the book about her (its own file): linked."""
    singer = _at(_unit(1, "The most remarkable creation of MTV is Madonna.", 0.8, ENGLISH_PAGE), "371.md", "Madonna")
    book = _at(_unit(2, "The book was released in November 2001.", 0.4, ENGLISH_PAGE), "356.md", "Madonna")
    assert linked_passages("Who wrote the book named after the artist MTV created?", [singer, book]) == {2}


TRANSLATED = {
    "tar.md": "# tar\n\n> Archiving utility.\n> Often combined with a compression method, such as gzip or bzip2.\n\n"
                 "- Extract a (compressed) archive file into the target directory:\n\n"
                 "`tar xf path/to/source.tar.gz --directory path/to/directory`\n",
    "tar-de.md": "# tar\n\n> Archivierungswerkzeug.\n> Wird oft mit einer Kompressionsmethode wie gzip oder bzip2 kombiniert.\n\n"
                 "- Entpacke eine (komprimierte) Archivdatei in das Zielverzeichnis:\n\n"
                 "`tar xf pfad/zu/quelle.tar.gz --directory pfad/zu/verzeichnis`\n",
}


@pytest.mark.parametrize("question, own", [
    ("How do I extract a tar.gz archive into a target directory?", "tar.md"),
    ("Wie entpacke ich ein tar.gz-Archiv in ein Zielverzeichnis?", "tar-de.md"),
])
def test_in_a_folder_of_translations_the_other_language_s_units_score_less(tmp_path, embedder, question, own):
    folder = write_notes(tmp_path / "notes", TRANSLATED)
    scores: dict[float, dict[tuple[str, str], float]] = {}
    for penalty in (0.0, 0.05):
        settings = load_settings(folder, {"db": str(tmp_path / "index.db"), "answer.writer": "quote",
                                          "answer.evidence_other_language": penalty}, env={})
        index = Index(settings, embedder)
        try:
            index.sync()
            answer = Assistant(index).ask(question, strategy="hybrid")
        finally:
            index.close()
        scores[penalty] = {(e.passage.path, e.plain): e.score for e in answer.evidence}
        assert answer.evidence[0].passage.path == own
    assert {path for path, _ in scores[0.0]} == set(TRANSLATED)
    for unit, before in scores[0.0].items():
        taken = 0.0 if unit[0] == own else 0.05
        assert scores[0.05][unit] == pytest.approx(before - taken, abs=1e-6), unit
