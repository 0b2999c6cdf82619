"""Settings files: a retired setting still loads, an unknown one is refused."""

from __future__ import annotations

import logging

import pytest

from localrag.config import ConfigError, load_settings


def _config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_retired_setting_in_an_old_config_file_is_ignored_and_said(tmp_path, caplog):
    path = _config(tmp_path, "[remind]\nsynonym_cos = 0.9\nseeds = 3\n")
    with caplog.at_level(logging.INFO, logger="localrag.config"):
        settings = load_settings(tmp_path, config_file=path, env={})
    assert settings.remind.seeds == 3
    assert not hasattr(settings.remind, "synonym_cos")
    assert "remind.synonym_cos is no longer used" in caplog.text


def test_an_unknown_setting_is_still_an_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown setting remind.synonym_cosine"):
        load_settings(tmp_path, config_file=_config(tmp_path, "[remind]\nsynonym_cosine = 0.9\n"), env={})
