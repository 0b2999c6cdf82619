"""Settings files: a retired setting still loads, an unknown one is refused; a mode setting (a
``Literal`` field) takes only its words."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, get_type_hints

import pytest

from localrag.config import MOVED, ConfigError, Settings, choices, load_settings


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


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_a_moved_setting_loads_into_its_new_name_from_each_source(tmp_path, caplog, old: str, new: str):
    section, _, field = old.partition(".")
    to_section, _, to_field = new.partition(".")
    value = 7 if field != "coref_threshold" else 0.7
    with caplog.at_level(logging.INFO, logger="localrag.config"):
        from_file = load_settings(tmp_path, config_file=_config(tmp_path, f"[{section}]\n{field} = {value}\n"), env={})
    assert f"setting {old} is now {new}" in caplog.text
    from_env = load_settings(tmp_path, env={f"LOCALRAG_{section}_{field}".upper(): str(value)})
    from_flag = load_settings(tmp_path, {old: value}, env={})
    for settings in (from_file, from_env, from_flag):
        assert getattr(getattr(settings, to_section), to_field) == value
        assert not hasattr(getattr(settings, section), field)
    both = load_settings(tmp_path, config_file=_config(tmp_path, f"[{section}]\n{field} = {value}\n"),
                         env={f"LOCALRAG_{to_section}_{to_field}".upper(): "3"})
    assert getattr(getattr(both, to_section), to_field) == 3, "a later source's new name wins over the old one"


def test_an_unknown_setting_is_still_an_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown setting remind.synonym_cosine"):
        load_settings(tmp_path, config_file=_config(tmp_path, "[remind]\nsynonym_cosine = 0.9\n"), env={})


def _sections() -> list[tuple[str, type]]:
    """("", Settings) and ("index.", IndexSettings), ...: every settings dataclass with its dotted prefix."""
    return [("", Settings)] + [(f"{f.name}.", type(getattr(Settings(), f.name))) for f in dataclasses.fields(Settings)
                               if dataclasses.is_dataclass(getattr(Settings(), f.name))]


def _mode_settings() -> list[tuple[str, tuple[str, ...]]]:
    return [(prefix + name, words) for prefix, cls in _sections() for name, words in choices(cls).items()]


# the str settings that take more than a fixed set of words: paths, model names, urls, prefixes, plugin names
FREE_STRINGS = {"folder", "db", "strategy", "index.embedder", "index.embed_query_prefix", "index.embed_passage_prefix",
                "index.extractor", "llm.model", "llm.url", "llm.backend", "llm.url_model", "llm.api_key_env",
                "llm.index_model"}


def test_every_str_setting_is_a_mode_or_a_known_free_string():
    modes = {name for name, _ in _mode_settings()}
    strings = {prefix + f.name for prefix, cls in _sections() for f in dataclasses.fields(cls)
               if get_type_hints(cls)[f.name] is str}
    assert strings == FREE_STRINGS, "a str setting with a fixed set of values gets a Literal type in its settings dataclass"
    assert {"neuropath.merge", "remind.rank", "answer.pick", "index.ocr"} <= modes


@pytest.mark.parametrize(("name", "words"), _mode_settings())
def test_a_mode_default_is_one_of_its_words(name: str, words: tuple[str, ...]):
    section, _, field = name.rpartition(".")
    value: Any = getattr(getattr(Settings(), section) if section else Settings(), field)
    assert value in words


@pytest.mark.parametrize(("name", "words"), _mode_settings())
def test_a_typo_in_a_mode_setting_is_refused_with_its_words(tmp_path, name: str, words: tuple[str, ...]):
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, {name: words[0] + "x"}, env={})
    assert str(err.value) == f"{name} must be one of {', '.join(words)}; got {words[0] + 'x'!r}"


@pytest.mark.parametrize(("name", "words"), _mode_settings())
def test_every_word_of_a_mode_setting_loads(tmp_path, name: str, words: tuple[str, ...]):
    section, _, field = name.rpartition(".")
    for word in words:
        settings = load_settings(tmp_path, {name: word}, env={})
        assert getattr(getattr(settings, section) if section else settings, field) == word


def test_a_mode_typo_in_a_config_file_names_the_section(tmp_path):
    path = _config(tmp_path, '[neuropath]\nmerge = "fusd"\n')
    with pytest.raises(ConfigError, match=r"^neuropath.merge must be one of paths-first, fused; got 'fusd'$"):
        load_settings(tmp_path, config_file=path, env={})
