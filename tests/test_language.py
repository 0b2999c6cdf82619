"""The answer layer's English rules apply to English questions only: another language's question gets
the evidence unit that answers it, quoted, with no model call, and abstention by cosine still works."""

from __future__ import annotations

import pytest

from kg_helpers import write_notes
from localrag.answer.abstain import check_evidence
from localrag.api import Assistant, Index
from localrag.config import AnswerSettings, load_settings
from localrag.language import is_english, question_language

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
    assert not check_evidence(german, [], 0.5, settings, names_rule=False).weak
    assert check_evidence(german, [], 0.1, settings, names_rule=False).weak  # the cosine rule still applies


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
