"""Lexical search in Chinese and Japanese: the CJK bigram table beside passages_fts (real SQLite, real index)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kg_helpers import write_notes

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.store import schema
from localrag.text.cjk import cjk_bigrams, cjk_terms
from localrag.store.db import Store
from localrag.store.lexical import fts_query

NOTES = {
    "tar.md": "# tar\n\n使用 tar 命令解压缩文件。\n",
    "rm.md": "# rm\n\n使用 rm 命令删除文件或目录。\n",
    "cp.md": "# cp\n\n把文件复制到另一个目录。\n",
    "logs.md": "# docker logs\n\n查看容器的日志，只显示最后几行。\n",
    "ja-tar.md": "# tar\n\ntar コマンドでアーカイブを展開します。\n",
    "ja-rm.md": "# rm\n\nrm コマンドでファイルを削除します。\n",
    "archives.md": "# Archives\n\nExtract a tar archive with tar xf; list it with tar tf.\n",
    "backups.md": "# Backups\n\nCopy the folder to the backup disk every Friday with rsync.\n",
    "cooking.md": "# Bread\n\nKnead the dough for ten minutes, then let it rise for an hour.\n",
}
ENGLISH = ["How do I extract a tar archive?", "copy the folder to the backup disk", "how long do I knead dough",
           "rsync Friday", "tar"]


@pytest.fixture
def index(tmp_path: Path, embedder):
    opened = Index(load_settings(write_notes(tmp_path / "notes", NOTES), env={}), embedder)
    opened.sync()
    yield opened
    opened.close()


def top_paths(index: Index, question: str, strategy: str = "lexical", k: int = 5) -> list[str]:
    return [sp.passage.path for sp in Assistant(index, llm=object()).retrieve(question, strategy, k).passages]


def words_table_hits(store: Store, question: str, k: int = 20) -> list[tuple[int, float]]:
    """What the unicode61 table alone answers: the lexical list before the CJK table."""
    query = fts_query(question)
    rows = store.query("SELECT rowid, bm25(passages_fts, 2.0, 1.0, 1.0) AS score FROM passages_fts "
                       "WHERE passages_fts MATCH ? ORDER BY score LIMIT ?", (query, k)) if query else []
    return [(int(r[0]), -float(r[1])) for r in rows]


def cjk_rows(store: Store) -> dict[int, str]:
    return {int(r[0]): str(r[1]) for r in store.query("SELECT rowid, text FROM passages_cjk")}


def test_cjk_runs_are_cut_into_overlapping_bigrams_and_other_text_is_left_out():
    assert cjk_bigrams("使用 tar 命令解压缩文件") == ["使用", "命令", "令解", "解压", "压缩", "缩文", "文件"]
    assert cjk_bigrams("tar コマンドで展開") == ["コマ", "マン", "ンド", "ドで", "で展", "展開"]
    assert cjk_bigrams("用 sudo 再来一次") == ["用", "再来", "来一", "一次"]  # a lone character stays a term
    assert cjk_bigrams("パス・ワード") == ["パス", "ワー", "ード"]  # the katakana middle dot is punctuation
    assert cjk_terms("Extract a tar archive, über-quick") == "" and cjk_terms(None) == ""


def test_a_chinese_question_finds_a_note_by_a_word_only_in_its_chinese_text(index):
    question = "如何解压缩"
    assert words_table_hits(index.store, question) == []  # unicode61 reads 使用/命令解压缩文件 as whole tokens
    assert top_paths(index, question)[0] == "tar.md"
    assert top_paths(index, "怎么删除目录？")[0] == "rm.md"
    assert top_paths(index, question, "hybrid")[0] == "tar.md"


def test_a_two_character_word_is_found(index):
    # 日志 ("log") is two characters: FTS5's trigram tokenizer cannot match it, the bigram table does
    assert words_table_hits(index.store, "日志") == []
    assert top_paths(index, "日志")[0] == "logs.md"
    assert top_paths(index, "怎么看日志")[0] == "logs.md"


def test_a_japanese_question_finds_its_note(index):
    assert words_table_hits(index.store, "アーカイブを展開するには？") == []
    assert top_paths(index, "アーカイブを展開するには？")[0] == "ja-tar.md"
    assert top_paths(index, "ファイルを削除したい")[0] == "ja-rm.md"


def test_a_mixed_question_counts_its_latin_words_too(index):
    # "tar" alone ties tar.md, ja-tar.md and archives.md; the Chinese words pick the Chinese note
    assert top_paths(index, "tar 怎么解压缩")[0] == "tar.md"


def test_an_english_question_gets_exactly_the_words_table_list(index):
    store = index.store
    assert len(cjk_rows(store)) == 6  # only passages with CJK text have a row
    some = {pid for pid, _ in words_table_hits(store, "tar")}
    for question in ENGLISH:
        expected = words_table_hits(store, question)
        assert expected, question
        assert store.lexical.search(question, 20) == expected
        assert store.lexical.search(question, 20, side=True) == expected
        assert store.lexical.search(question, 20, only=some) == [h for h in expected if h[0] in some]


def test_editing_and_deleting_a_note_removes_its_cjk_rows(index):
    folder = index.folder
    (folder / "tar.md").write_text("# tar\n\n使用 tar 命令打包文件。\n", encoding="utf-8")
    index.sync()
    assert "tar.md" not in top_paths(index, "如何解压缩")
    assert top_paths(index, "打包")[0] == "tar.md"
    (folder / "logs.md").unlink()
    (folder / "ja-rm.md").unlink()
    index.sync()
    store = index.store
    rows = cjk_rows(store)
    passages = {int(r[0]) for r in store.query("SELECT id FROM passages")}
    assert len(rows) == 4 and set(rows) <= passages
    assert not any("日志" in text or "削除" in text for text in rows.values())
    assert top_paths(index, "日志") == [] and "ja-rm.md" not in top_paths(index, "ファイルを削除したい")


def test_a_renamed_note_keeps_its_passage_and_its_cjk_row_follows_the_title(tmp_path, embedder):
    # a note without a heading is titled by its file name: a move retitles it and keeps its passage
    folder = write_notes(tmp_path / "notes", {"curl.md": "Use curl for downloads.\n", "wget.md": "Or wget.\n"})
    index = Index(load_settings(folder, env={}), embedder)
    try:
        index.sync()
        assert cjk_rows(index.store) == {}
        (folder / "curl.md").rename(folder / "网络工具.md")
        report = index.sync()
        assert report.moved == 1 and report.passages_kept == 1 and report.passages_added == 0
        assert top_paths(index, "网络")[0] == "网络工具.md"
        (folder / "网络工具.md").rename(folder / "下载.md")
        index.sync()
        assert top_paths(index, "网络") == [] and top_paths(index, "下载")[0] == "下载.md"
        (folder / "下载.md").rename(folder / "downloads.md")
        index.sync()
        assert cjk_rows(index.store) == {} and top_paths(index, "下载") == []
    finally:
        index.close()


def test_an_index_from_before_the_cjk_table_gets_it_filled(tmp_path, embedder, monkeypatch):
    db = tmp_path / "index.db"
    monkeypatch.setattr("localrag.store.db.MIGRATIONS", [m for m in schema.MIGRATIONS if m.version < 13])
    old = Store(db, dim=embedder.dim, embedder_id=embedder.id)
    texts = ["使用 tar 命令解压缩文件。", "Extract a tar archive with tar xf.", "tar コマンドでアーカイブを展開します。"]
    with old.transaction():
        doc = old.docs.insert("a.md", 1, 5, "x", "markdown", "A")
        for i, text in enumerate(texts):  # as schema 12 wrote them: passages_fts only
            pid = old.execute("INSERT INTO passages(doc_id, ordinal, heading, text, sha256, start_line, end_line, "
                              "tokens) VALUES(?,?,?,?,?,?,?,?)", (doc, i, "", text, f"s{i}", 1, 1, 1)).lastrowid
            old.execute("INSERT INTO passages_fts(rowid, title, heading, text) VALUES(?,?,?,?)", (pid, "A", "", text))
    assert old.schema_version() == 12
    old.close()
    monkeypatch.undo()
    upgraded = Store(db, dim=embedder.dim, embedder_id=embedder.id)
    try:
        assert upgraded.schema_version() == 13
        ids = [p for p, _, _ in upgraded.docs.passage_hashes(doc)]
        assert cjk_rows(upgraded) == {ids[0]: cjk_terms(texts[0]), ids[2]: cjk_terms(texts[2])}
        assert upgraded.lexical.search("如何解压缩", 5)[0][0] == ids[0]
        assert upgraded.lexical.search("展開", 5)[0][0] == ids[2]
        with upgraded.transaction():
            upgraded.docs.delete(doc)
        assert cjk_rows(upgraded) == {}
    finally:
        upgraded.close()
