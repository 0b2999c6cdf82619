"""The no-model abstention rules (answer/abstain.py): a far best sentence, or no note about the things asked."""

from __future__ import annotations

from localrag.answer.abstain import _title_keys, check_evidence, is_about, names_without_note, question_names
from localrag.config import AnswerSettings
from localrag.records import Passage


def _note(pid: int, title: str) -> Passage:
    return Passage(pid, pid, f"{pid}.md", title, 0, title, f"Something about {title}.", "sha", 1, 1)


def test_the_names_a_question_gives():
    assert question_names("Where was the director of film Eight Days A Week (Film) born?") == ["Eight Days A Week", "Film"]
    assert question_names("when did it happen?") == []
    assert question_names("What is the most popular hotel in Gisvi's city of birth?") == ["Gisvi"]
    assert question_names("Which Canadian actress starred in Barrier Device?") == ["Barrier Device"]
    assert question_names("Is KaTeX rendering on by default?") == ["KaTeX"]


def test_a_note_is_about_a_name_when_its_title_is_it_or_holds_it_as_whole_words():
    assert is_about("Aschenbrodel", ["Aschenbrödel"])  # accents aside
    assert is_about("Eight Days A Week (Film)", ["Eight Days A Week"])  # the qualifier aside
    assert is_about("the Tessaly Light lighthouse", ["Tessaly Light"])  # the title held in the name
    assert is_about("Hayek", ["Friedrich Hayek"]) and is_about("McRae", ["McRae, Arkansas"])
    assert is_about("Olympics", ["2018 Winter Olympics"])  # capitalised words and numbers extend the name
    assert not is_about("Orlinsford", ["Orlinsfordshire"])  # a longer word is another name
    assert not is_about("Art", ["Art Nouveau"])  # too short to say anything when held


def test_a_title_that_holds_the_name_among_lower_case_words_is_about_something_of_it():
    assert not is_about("Jung Joon-young", ["Jung Joon Young 1st mini album"])
    assert not is_about("Ed Roland", ["Ed Roland discography"])
    assert not is_about("Science News", ["Science News for Students"])
    assert is_about("Orlinsford", ["orlinsford market town"])  # no capitals to tell by: held is enough
    question = "Who performed in both Welcome to the Show and the band f(x)?"  # names "Welcome", "Show"
    assert is_about("Welcome", ["Welcome to the Show (TV series)"], question)  # the question says the title
    assert not is_about("Welcome", ["Welcome to Loserville"], question)


def test_a_hierarchy_title_is_about_each_of_its_segments():
    assert is_about("SQLite", ["dendron.topic.workspace.sqlite"])
    assert is_about("Greenhouse", ["community.events.greenhouse.2021 07 23 using dendron with 20k notes"])
    assert _title_keys("St. Louis") == {" st louis "}  # an abbreviation's dot does not split a title


def test_no_note_about_the_names_and_a_middling_sentence_abstains():
    settings = AnswerSettings(abstain_below=0.45, abstain_unnamed_below=0.6)
    question = "Who founded the Harebell Oven in Quillhaven?"
    unrelated = [_note(1, "Orlinsford"), _note(2, "Kallendar Workshop")]
    assert names_without_note(question, unrelated) == (["Harebell Oven", "Quillhaven"], 2)
    check = check_evidence(question, unrelated, 0.55, settings)
    assert check.weak and "Harebell Oven" in check.reason and "abstain_unnamed_below" in check.reason
    assert not check_evidence(question, unrelated, 0.65, settings).weak  # a close sentence still answers
    about_one = [_note(1, "The Harebell Oven")]  # half of the names have their note
    assert not check_evidence(question, about_one, 0.55, settings).weak
    assert check_evidence(question, about_one, 0.40, settings).weak  # the cosine rule alone
    off = AnswerSettings(abstain_below=0, abstain_unnamed_below=0)
    assert not check_evidence(question, unrelated, 0.1, off).weak and not check_evidence(question, [], None, off).weak


def test_a_question_that_names_nothing_rests_on_the_cosine_rule():
    settings = AnswerSettings(abstain_below=0.45, abstain_unnamed_below=0.6)
    assert not check_evidence("what should i pack for the trip?", [_note(1, "Packing list")], 0.5, settings).weak
    assert check_evidence("what should i pack for the trip?", [], None, settings).reason == "no evidence sentences"


def test_a_name_the_whole_folder_says_is_its_setting_not_a_missing_note():
    settings = AnswerSettings(abstain_below=0.3, abstain_unnamed_below=0.6, abstain_common_from=25)
    question = "On Linux, how do I write an image to a USB stick and watch its progress?"
    commands = [_note(1, "dd"), _note(2, "woeusb")]
    said = {"Linux": 400, "USB": 30}  # a folder of command pages: both words everywhere
    assert names_without_note(question, commands) == (["Linux", "USB"], 2)
    assert check_evidence(question, commands, 0.55, settings).weak  # every name counts
    assert not check_evidence(question, commands, 0.55, settings, common=lambda n: said.get(n, 0)).weak
    rare = {"Linux": 3, "USB": 2}  # a name few passages say still needs its note
    assert check_evidence(question, commands, 0.55, settings, common=lambda n: rare.get(n, 0)).weak
    off = AnswerSettings(abstain_below=0.3, abstain_unnamed_below=0.6, abstain_common_from=0)
    assert check_evidence(question, commands, 0.55, off, common=lambda n: said.get(n, 0)).weak


def test_a_name_no_passage_of_the_folder_says_abstains_whatever_the_best_sentence_scores():
    question = "Does the Dendron preview render PlantUML diagrams?"
    preview = [_note(1, "dendron.topic.preview")]
    said = {"Dendron": 1000, "Mermaid": 12, "Windows": 40, "PC": 3}
    settings = AnswerSettings(abstain_below=0.3, abstain_unnamed_below=0.6)
    check = check_evidence(question, preview, 0.8, settings, common=lambda n: said.get(n, 0))
    assert check.weak and "“PlantUML”" in check.reason
    # every name the question gives is said somewhere: the other rules decide
    assert not check_evidence("Does the Dendron preview render Mermaid diagrams?", preview, 0.8, settings,
                              common=lambda n: said.get(n, 0)).weak
    # a name's words said apart count: "Windows PC" in a folder that says "Windows" and "PC"
    assert not check_evidence("How do I restart my Windows PC right away?", preview, 0.8, settings,
                              common=lambda n: said.get(n, 0)).weak
    # without a way to count (no index), or turned off: no such rule; a non-English question's names are read by
    # their script, and "PlantUML" is no acronym (tests/test_language.py)
    assert not check_evidence(question, preview, 0.8, settings).weak
    off = AnswerSettings(abstain_below=0.3, abstain_unnamed_below=0.6, abstain_unmentioned=False)
    assert not check_evidence(question, preview, 0.8, off, common=lambda n: said.get(n, 0)).weak
    assert not check_evidence(question, preview, 0.8, settings, common=lambda n: said.get(n, 0),
                              english=False).weak


def test_a_misspelt_name_is_not_a_missing_one():
    question = "Who ruled the Margaraviate of Brandenburg in 1600?"
    found = [Passage(1, 1, "1.md", "Brandenburg", 0, "Brandenburg", "The Margraviate of Brandenburg was ruled by "
                     "Joachim Frederick.", "sha", 1, 1)]
    said = {"Brandenburg": 30, "Margraviate": 4}
    settings = AnswerSettings(abstain_below=0.3, abstain_unnamed_below=0.6)
    assert not check_evidence(question, found, 0.8, settings, common=lambda n: said.get(n, 0)).weak
    elsewhere = [_note(2, "Brandenburg")]  # the passages found do not spell anything like it
    assert "Margaraviate" in check_evidence(question, elsewhere, 0.8, settings, common=lambda n: said.get(n, 0)).reason
    # the passages found do not say it, but the folder does: a misspelling, not a missing thing
    folder_words = {"marg": {"margaret", "margraviate", "margin"}}
    assert not check_evidence(question, elsewhere, 0.8, settings, common=lambda n: said.get(n, 0),
                              starting=lambda prefix: folder_words.get(prefix, set())).weak


def test_a_question_about_a_thing_the_folder_never_names_is_not_in_your_notes(tmp_path, embedder):
    """Real SQLite, FTS5 and embedder: a never-mentioned name abstains whatever the cosine, a misspelt one
    is answered from the note that spells it right."""
    from localrag.api import Assistant, Index
    from localrag.config import load_settings

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "preview.md").write_text("# Preview\n\nThe preview renders Mermaid diagrams and KaTeX math.\n")
    (folder / "austria.md").write_text("# Margraviate of Austria\n\nThe Margraviate of Austria was a march "
                                       "of the Holy Roman Empire, created in 976.\n")
    settings = load_settings(folder, {"db": str(tmp_path / "index.db"), "answer.writer": "quote"}, env={})
    index = Index(settings, embedder)
    try:
        index.sync()
        assert "margraviate" in index.words_starting("marg")
        assistant = Assistant(index)
        missing = assistant.ask("Does the preview render PlantUML diagrams?", strategy="hybrid")
        assert missing.abstained and "PlantUML" in missing.composed.abstain_reason
        misspelt = assistant.ask("When was the Margaraviate of Austria created?", strategy="hybrid")
        assert not misspelt.abstained and misspelt.span == "976"
    finally:
        index.close()
