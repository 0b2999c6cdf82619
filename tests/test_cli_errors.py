"""Mistakes on the command line: one unwrapped line on stderr, exit 2 for usage and 1 for failures,
no traceback (unless --debug / LOCALRAG_DEBUG), checked before any work; top-level options are
accepted before the command name as well as after it.

The CLI runs in process (``localrag.cli.main``) with the session's real embedder as the default one,
so each case costs a command, not a model load; rich writes to the captured streams at 80 columns.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import localrag.embed
from localrag.cli import main

REPO = Path(__file__).resolve().parents[1]
SMALL_NOTES = ["orlinsford.md", "saltreach.md", "quillhaven.md"]


@pytest.fixture(autouse=True)
def _shared_embedder(embedder, monkeypatch):
    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    for name in [k for k in __import__("os").environ if k.startswith("LOCALRAG_")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def small_notes(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli") / "notes"
    d.mkdir()
    for rel in SMALL_NOTES:
        shutil.copy(REPO / "examples" / "notes" / rel, d / rel)
    return d


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {err!r}"
    assert "Traceback" not in err
    return lines[0]


# -- options before the command -----------------------------------------------------------------------

def test_top_level_options_work_before_the_command(small_notes, tmp_path, capsys):
    db = tmp_path / "elsewhere" / "index.db"
    code, _, err = _run(capsys, "--db", str(db), "index", str(small_notes), "--no-graph", "--quiet")
    assert code == 0, err
    assert db.exists() and not (small_notes / ".localrag" / "index.db").exists()
    code, out, err = _run(capsys, "--db", str(db), "status", str(small_notes), "--json")
    assert code == 0, err
    assert json.loads(out)["db"] == str(db) and json.loads(out)["documents"] == len(SMALL_NOTES)
    code, out, _ = _run(capsys, "status", str(small_notes), "--db", str(db), "--json")  # after: as before
    assert code == 0 and json.loads(out)["documents"] == len(SMALL_NOTES)
    # --model reaches `ask` when given first: the missing model file is the error, not the arguments
    code, _, err = _run(capsys, "--model", str(tmp_path / "no-such.gguf"), "--db", str(db), "ask", "Where is it?",
                        "-f", str(small_notes), "--no-sync")
    assert code == 1, err
    assert "model file not found" in _one_error_line(err) and "no-such.gguf" in err


def test_an_unknown_option_is_one_line_with_exit_2(small_notes, capsys):
    code, _, err = _run(capsys, "status", str(small_notes), "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in _one_error_line(err)


# -- a mistyped folder --------------------------------------------------------------------------------

def test_a_missing_folder_is_refused_and_nothing_is_created(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "dir"
    for argv in (["index", str(missing)], ["status", str(missing)], ["ask", "who?", "-f", str(missing)],
                 ["doctor", str(missing), "--skip-model"], ["graph", "export", str(missing)]):
        code, _, err = _run(capsys, *argv)
        assert code == 2, (argv, err)
        assert "notes folder not found" in _one_error_line(err), argv
    assert not (tmp_path / "no").exists(), "nothing may be created for a folder that does not exist"


# -- ordinary mistakes, no tracebacks -----------------------------------------------------------------

def test_a_file_instead_of_a_folder_is_a_usage_error(small_notes, tmp_path, capsys):
    # a long path: the one line must not be wrapped at 80 columns either
    deep = tmp_path / ("a-rather-long-folder-name-" * 3) / "note.md"
    deep.parent.mkdir()
    deep.write_text("# Note\n\nnot a folder\n")
    for argv in (["index", str(deep)], ["ask", "who?", "-f", str(deep)], ["status", str(deep)],
                 ["doctor", str(deep), "--skip-model"]):
        code, _, err = _run(capsys, *argv)
        assert code == 2, (argv, err)
        line = _one_error_line(err)
        assert "is a file, not a folder" in line and str(deep) in line and len(line) > 80, argv


def test_unknown_strategy_is_refused_before_any_sync(small_notes, tmp_path, capsys):
    fresh = tmp_path / "fresh"
    shutil.copytree(small_notes, fresh, ignore=shutil.ignore_patterns(".localrag"))
    code, _, err = _run(capsys, "ask", "Where is Orlinsford?", "-f", str(fresh), "--strategy", "nonsense")
    assert code == 2 and "unknown strategy 'nonsense'" in _one_error_line(err)
    assert not (fresh / ".localrag").exists(), "the strategy is checked before the folder is synced"


def test_an_empty_question_is_refused(small_notes, capsys):
    for question in ("", "   "):
        code, _, err = _run(capsys, "ask", question, "-f", str(small_notes))
        assert code == 2 and "the question is empty" in _one_error_line(err)


def test_debug_shows_the_traceback(small_notes, monkeypatch, capsys):
    note = small_notes / SMALL_NOTES[0]
    code, _, err = _run(capsys, "--debug", "index", str(note))
    assert code == 2 and "Traceback" in err and err.strip().splitlines()[-1].startswith("error:")
    monkeypatch.setenv("LOCALRAG_DEBUG", "1")
    code, _, err = _run(capsys, "index", str(note))
    assert code == 2 and "Traceback" in err


def test_an_unexpected_error_is_one_line_pointing_at_debug(small_notes, monkeypatch, capsys):
    from localrag.api import Index

    def broken(self, *a, **kw):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(Index, "sync", broken)
    code, _, err = _run(capsys, "index", str(small_notes), "--quiet")
    line = _one_error_line(err)
    assert code == 1 and "unexpected ZeroDivisionError: simulated bug" in line and "--debug" in line


# -- odd input and settings: bytes, limits, folders and files mixed up, typos, unwritable places --------

def test_a_question_with_bytes_that_are_not_utf8_is_asked(small_notes, tmp_path, capsys):
    # the shell hands `$'\xff\xfe'` over as lone surrogates (surrogateescape), which SQLite refuses
    db = tmp_path / "index.db"
    code, out, err = _run(capsys, "ask", "who leads \udcff\udcfe Saltreach?", "-f", str(small_notes), "--db", str(db),
                          "--no-answer", "--json", "--where", "path:\udcff", "--session", "s\udcff")
    assert code == 0, err
    assert json.loads(out)["question"] == "who leads \ufffd\ufffd Saltreach?"


def test_top_k_beyond_what_the_index_can_search_is_a_usage_error(small_notes, capsys):
    for k in ("0", "100000000"):
        code, _, err = _run(capsys, "ask", "Where is Saltreach?", "-f", str(small_notes), "-k", k, "--no-answer")
        assert code == 2 and "--top-k must be between 1 and 1000, not " + k in _one_error_line(err)


def test_a_db_path_that_is_a_folder_is_refused_and_nothing_is_created(small_notes, tmp_path, capsys):
    notes = tmp_path / "notes"
    shutil.copytree(small_notes, notes, ignore=shutil.ignore_patterns(".localrag"))
    (notes / "people").mkdir()
    before = sorted(p.relative_to(notes) for p in notes.rglob("*"))
    for argv in (["status", str(notes)], ["index", str(notes)], ["ask", "who?", "-f", str(notes)]):
        code, _, err = _run(capsys, *argv, "--db", str(notes / "people"))
        assert code == 2, (argv, err)
        assert f"the index path {notes / 'people'} is a folder" in _one_error_line(err), argv
    assert sorted(p.relative_to(notes) for p in notes.rglob("*")) == before, "no people.sessions/, no .localrag/"


def test_a_config_file_that_is_missing_or_a_folder_is_a_usage_error(small_notes, tmp_path, capsys):
    code, _, err = _run(capsys, "status", str(small_notes), "--config", str(tmp_path / "missing.toml"))
    assert code == 2 and f"config file not found: {tmp_path / 'missing.toml'}" in _one_error_line(err)
    code, _, err = _run(capsys, "--config", str(tmp_path), "status", str(small_notes))
    assert code == 2 and "is not a file: give a TOML file" in _one_error_line(err)


@pytest.mark.parametrize("index_toml, message", [
    ("embed_batch = 0", "index.embed_batch must be at least 1, got 0"),
    ("chunk_max_tokens = -5", "index.chunk_max_tokens must be at least 1, got -5"),
    ("chunk_min_tokens = 500\nchunk_max_tokens = 100",
     "index.chunk_min_tokens must be between 0 and index.chunk_max_tokens (100), got 500"),
])
def test_index_numbers_that_cannot_work_are_refused(small_notes, tmp_path, capsys, index_toml, message):
    config = tmp_path / "bad.toml"
    config.write_text(f"[index]\n{index_toml}\n")
    fresh = tmp_path / "fresh"
    shutil.copytree(small_notes, fresh, ignore=shutil.ignore_patterns(".localrag"))
    code, _, err = _run(capsys, "index", str(fresh), "--config", str(config), "--quiet")
    assert code == 1 and message in _one_error_line(err)
    assert not (fresh / ".localrag").exists(), "the settings are checked before anything is indexed"


@pytest.mark.parametrize("where", ["config", "env"])
def test_a_mode_setting_typo_is_one_line_with_exit_1(small_notes, tmp_path, capsys, monkeypatch, where):
    fresh = tmp_path / "fresh"
    shutil.copytree(small_notes, fresh, ignore=shutil.ignore_patterns(".localrag"))
    argv = ["index", str(fresh), "--quiet"]
    if where == "config":
        config = tmp_path / "bad.toml"
        config.write_text('[neuropath]\nmerge = "fusd"\n')
        argv += ["--config", str(config)]
    else:
        monkeypatch.setenv("LOCALRAG_NEUROPATH_MERGE", "fusd")
    code, _, err = _run(capsys, *argv)
    assert code == 1
    assert _one_error_line(err) == "error: neuropath.merge must be one of paths-first, fused; got 'fusd'"
    assert not (fresh / ".localrag").exists(), "the settings are checked before anything is indexed"


def _immutable(path: Path, on: bool) -> bool:
    import subprocess

    return subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


def test_an_index_folder_that_cannot_be_written_gets_the_documented_message(small_notes, tmp_path, capsys):
    notes = tmp_path / "notes"
    shutil.copytree(small_notes, notes, ignore=shutil.ignore_patterns(".localrag"))
    code, _, err = _run(capsys, "index", str(notes), "--no-graph", "--quiet")
    assert code == 0, err
    state = notes / ".localrag"
    lock = state / "index.db.lock"
    if not _immutable(lock, True):  # root ignores file modes: chattr needs CAP_LINUX_IMMUTABLE and ext4/xfs
        pytest.skip("chattr +i is not available here")
    try:
        code, _, err = _run(capsys, "index", str(notes), "--no-graph", "--quiet")
        line = _one_error_line(err)
        assert code == 1 and f"cannot write the index database {state / 'index.db'}" in line, line
        assert "make" in line and "writable" in line and "the index itself is not damaged" in line
    finally:
        _immutable(lock, False)
    assert _immutable(state, True)
    try:
        for argv in (["index", str(notes), "--no-graph", "--quiet"], ["ask", "Where is Saltreach?", "-f", str(notes),
                                                                     "--no-answer"]):
            code, _, err = _run(capsys, *argv)
            line = _one_error_line(err)
            assert code == 1 and "cannot write the index database" in line and "not damaged" in line, (argv, line)
    finally:
        _immutable(state, False)


def test_a_strategy_typo_in_the_settings_is_one_line_naming_the_choices(small_notes, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LOCALRAG_STRATEGY", "hybird")
    code, _, err = _run(capsys, "ask", "Who leads the Lanternfish project?", "-f", str(small_notes), "--no-answer")
    line = _one_error_line(err)
    assert code == 1 and line.startswith("error: unknown strategy 'hybird'") and "hybrid" in line
    assert "unexpected" not in line and "--debug" not in line
