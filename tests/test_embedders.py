"""index.embedder: MiniLM, the bundled multilingual-e5-small, a user's GGUF; recorded in the index, never mixed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from localrag.api import Index
from localrag.cli import main
from localrag.config import ConfigError, load_settings
from localrag.embed_e5 import E5SmallEmbedder
from localrag.embed_gguf import GGUFEmbedder, prefixes_for
from localrag.embedders import embedder_for
from localrag.store import EmbedderMismatch
from kg_helpers import write_notes

NOTES = {
    "archive.md": "# Archive\n\nExtract a compressed archive into a chosen folder with `tar xf archive.tar -C folder`.\n",
    "branch.md": "# Branches\n\nShow the name of the current Git branch with `git branch --show-current`.\n",
    "kalender.md": "# Kalender\n\nZeige einen Kalender an, in dem die Woche mit Montag beginnt: `cal --monday`.\n",
}


@pytest.fixture(scope="module")
def e5() -> E5SmallEmbedder:
    return E5SmallEmbedder(threads=1)


def test_e5_vectors_are_unit_norm_and_questions_find_their_passage_across_languages(e5):
    passages = [NOTES["archive.md"], NOTES["branch.md"], NOTES["kalender.md"]]
    vectors = e5.encode(passages)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    for question, best in (("Wie entpacke ich ein Archiv in einen anderen Ordner?", 0),
                           ("¿Cómo averiguo en qué rama estoy ahora mismo?", 1),
                           ("怎样显示一个以星期一开始的日历？", 2),
                           ("Comment afficher un calendrier qui commence le lundi ?", 2)):
        assert int(np.argmax(vectors @ e5.encode_one(question))) == best, question


def test_e5_question_and_passage_sides_differ(e5):
    # e5 was trained with "query: " and "passage: ": the same text embeds differently on each side
    text = "extract an archive"
    assert float(e5.encode([text])[0] @ e5.encode_one(text)) < 0.999


def test_e5_window_counter_counts_tokens_without_the_prefix(e5):
    count, window = e5.window_counter()
    assert count([""]) == [0]
    assert count(["hello world"])[0] >= 2
    assert 500 <= window < 512


def _settings(folder: Path, db: Path, **overrides):
    return load_settings(folder, {"db": str(db), **overrides}, env={})


def test_e5_similarities_are_put_on_minilms_scale_for_the_answer_rules(e5, embedder):
    from localrag.answer.evidence import rank_evidence
    from localrag.config import AnswerSettings
    from localrag.embed import comparable_similarity
    from localrag.records import Passage

    raw = np.array([0.805, 0.899])
    assert np.allclose(comparable_similarity(e5, raw), [0.060, 0.761])
    assert comparable_similarity(embedder, raw) is raw, "MiniLM's cosines are the scale itself"
    text = "Extract a gzipped archive into a folder: tar xzf archive.tar.gz -C folder\n\nThe harbour wall was rebuilt in granite."
    passage = Passage(1, 1, "tar.md", "tar", 0, "", text, "x", 1, 3)
    ranked = rank_evidence(e5, "Wie entpacke ich ein .tar.gz-Archiv in einen Ordner?", [passage])
    below = AnswerSettings().abstain_below
    assert ranked[0].text.startswith("Extract") and ranked[0].similarity > below > ranked[-1].similarity


def test_e5_coreference_keeps_spellings_of_one_name_not_every_pair_above_a_raw_0_8(tmp_path, e5):
    from localrag.store.documents import NewPassage

    names = ["ada lovelace", "lovelace ada", "london", "charles babbage", "orlinsford"]
    vecs = e5.encode(names)
    assert float(vecs[0] @ vecs[2]) > 0.8, "e5's unrelated names score above MiniLM's coreference threshold"
    index = Index(_settings(write_notes(tmp_path / "notes", NOTES), tmp_path / "index.db"), e5)
    try:
        store = index.store
        with store.transaction():
            doc = store.docs.insert("n.md", 10, 1, "n.md", "markdown", "n.md")
            pid = store.docs.insert_passage(doc, "n.md", NewPassage(0, "", "names", "n-0", 1, 1, 5))
        store.graph.write_extraction(pid, [], names, e5.encode)
        ids = store.graph.entities.ids(names)
        assert [a for a, _ in store.graph.coref.stored(ids["ada lovelace"])] == [ids["lovelace ada"]]
        assert store.graph.coref.stored(ids["london"]) == []
    finally:
        index.close()


def test_an_index_records_its_embedder_and_refuses_another_ones_vectors(tmp_path, embedder):
    folder, db = write_notes(tmp_path / "notes", NOTES), tmp_path / "index.db"
    with_minilm = Index(_settings(folder, db), embedder)
    with_minilm.sync()
    assert with_minilm.store.get_meta("embedder") == embedder.id
    assert with_minilm.store.get_meta("dim") == "384"
    with_minilm.close()
    with pytest.raises(EmbedderMismatch, match="--reembed"):
        Index(_settings(folder, db, **{"index.embedder": "e5-small"}))
    # refused before anything was written: MiniLM still opens it as it was
    again = Index(_settings(folder, db), embedder)
    assert again.status().passages == 3
    again.close()


def test_reembed_starts_a_new_index_with_progress_and_drops_the_old_one_when_complete(tmp_path, embedder, e5):
    folder, db = write_notes(tmp_path / "notes", NOTES), tmp_path / "index.db"
    with_minilm = Index(_settings(folder, db), embedder)
    with_minilm.sync()
    with_minilm.store.cache.put("entities", "a question", "m", 1, {"names": ["Archive"]})
    with_minilm.close()

    index = Index(_settings(folder, db, **{"index.embedder": "e5-small"}), e5, reembed=True)
    moved = index.replaced
    assert moved is not None and moved.exists() and moved.name.startswith("index.db.old-embedder-")
    assert index.store.get_meta("embedder") == e5.id
    assert index.store.cache.get("entities", "a question", "m", 1) == {"names": ["Archive"]}  # caches carried over
    events = []
    report = index.sync(progress=events.append)
    embedded = [e for e in events if e.phase == "embed"]
    assert report.embedded == 3 and embedded and embedded[-1].done == 3
    assert index.store.vectors.count() == index.status().passages == 3
    assert index.finish_reembed() == moved and not moved.exists()
    hits = index.store.vectors.knn(e5.encode_one("Wie zeige ich einen Kalender mit Montag als erstem Tag?"), 1)
    assert index.store.docs.passages([hits[0][0]])[0].path == "kalender.md"
    index.close()


def test_index_command_reembeds_on_request(tmp_path, capsys, monkeypatch):
    folder = write_notes(tmp_path / "notes", NOTES)
    db = tmp_path / "index.db"
    assert main(["index", str(folder), "--db", str(db), "--no-graph", "--quiet"]) == 0
    monkeypatch.setenv("LOCALRAG_INDEX_EMBEDDER", "e5-small")
    assert main(["index", str(folder), "--db", str(db), "--no-graph", "--quiet"]) == 1
    assert "--reembed" in capsys.readouterr().err
    assert main(["index", str(folder), "--db", str(db), "--no-graph", "--quiet", "--reembed"]) == 0
    out = capsys.readouterr().out
    assert "re-embedded with multilingual-e5-small-q4" in out and "embedded 3" in out
    assert not list(tmp_path.glob("index.db.old-embedder-*"))


def test_a_bad_embedder_setting_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="index.embedder must be minilm or e5-small or the path of a .gguf"):
        load_settings(tmp_path, {"index.embedder": "labse"}, env={})


def test_gguf_prefixes_follow_the_file_name_unless_set():
    assert prefixes_for(Path("multilingual-e5-small-q8_0.gguf"), "auto", "auto") == ("query: ", "passage: ")
    assert prefixes_for(Path("bge-m3-Q4_K_M.gguf"), "auto", "auto") == ("", "")
    assert prefixes_for(Path("bge-m3.gguf"), "Represent this: ", "auto") == ("Represent this: ", "")


def test_a_gguf_embedder_runs_through_llama_cpp_and_names_its_file(tmp_path, bundled_model):
    settings = _settings(write_notes(tmp_path / "notes", NOTES), tmp_path / "g.db",
                         **{"index.embedder": str(bundled_model), "index.embed_threads": 1, "llm.gpu_layers": 0})
    gguf = embedder_for(settings)
    assert isinstance(gguf, GGUFEmbedder) and gguf is embedder_for(settings)  # one instance per setting
    assert gguf.id == f"gguf:{bundled_model.name}:{bundled_model.stat().st_size}"
    vectors = gguf.encode(["tar xf archive.tar", "git branch --show-current"])
    assert vectors.shape == (2, gguf.dim) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    index = Index(settings)
    index.sync()
    assert index.store.get_meta("embedder") == gguf.id and index.store.vectors.count() == 3
    index.close()
