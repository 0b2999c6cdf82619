"""Errors localrag works around are logged; --verbose / LOCALRAG_LOG show them, nothing does otherwise."""

from __future__ import annotations

import argparse
import logging

import pytest

from localrag.cli import main
from localrag.commands.common import start_logging
from localrag.conversation.rewrite import _cache_put
from localrag.logs import LOG_FILE, configure
from localrag.store import Store


@pytest.fixture(autouse=True)
def _logging_off():
    yield
    configure(None)


@pytest.fixture
def old_config(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text("[remind]\nsynonym_cos = 0.9\n", encoding="utf-8")  # a retired setting: logged at info
    return path


def test_a_swallowed_cache_error_is_logged_with_its_traceback(caplog):
    store = Store(":memory:", dim=4, embedder_id="log-test")
    store.close()  # every write now raises
    with caplog.at_level(logging.WARNING, logger="localrag"):
        _cache_put(store.cache, "key", "model", "the rewrite")  # still no exception: the answer goes on
    (record,) = [r for r in caplog.records if r.name == "localrag.conversation.rewrite"]
    assert record.levelno == logging.WARNING and "could not cache the rewrite" in record.getMessage()
    assert record.exc_info is not None


def _status(capsys, tmp_path, old_config, *flags: str) -> str:
    folder = tmp_path / "notes"
    folder.mkdir(exist_ok=True)
    assert main([*flags, "status", str(folder), "--config", str(old_config)]) == 1  # not indexed: one error line
    return capsys.readouterr().err


def test_without_verbose_the_cli_prints_only_its_error(capsys, tmp_path, old_config, monkeypatch):
    monkeypatch.delenv("LOCALRAG_LOG", raising=False)
    err = _status(capsys, tmp_path, old_config)
    assert err.count("\n") == 1 and err.startswith("error:")


def test_verbose_and_the_environment_show_the_log_on_stderr(capsys, tmp_path, old_config, monkeypatch):
    monkeypatch.delenv("LOCALRAG_LOG", raising=False)
    err = _status(capsys, tmp_path, old_config, "--verbose")
    assert "INFO localrag.config: setting remind.synonym_cos is no longer used" in err
    monkeypatch.setenv("LOCALRAG_LOG", "warning")  # the variable wins: info is below it
    assert "synonym_cos" not in _status(capsys, tmp_path, old_config, "--verbose")
    monkeypatch.setenv("LOCALRAG_LOG", "debug")
    assert "synonym_cos" in _status(capsys, tmp_path, old_config)


def test_an_unknown_log_level_is_a_usage_error(capsys, tmp_path, old_config, monkeypatch):
    monkeypatch.setenv("LOCALRAG_LOG", "loud")
    assert main(["status", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: LOCALRAG_LOG='loud'")


def test_under_the_tui_the_log_goes_to_the_folders_file_not_the_screen(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("LOCALRAG_LOG", raising=False)
    start_logging(argparse.Namespace(command="tui", folder=str(tmp_path), verbose=True))
    logging.getLogger("localrag.test").warning("worked around something")
    configure(None)  # closes the file
    assert capsys.readouterr().err == ""
    assert "WARNING localrag.test: worked around something" in (tmp_path / ".localrag" / LOG_FILE).read_text()
