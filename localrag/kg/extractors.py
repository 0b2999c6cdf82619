"""The graph extractors' registry: "rules" (no model), "llm", "llm+rules" (the model, rules
when its reply is unusable), and third-party ones from the entry-point group
``localrag.extractors`` (a class with ``name``, ``needs_llm`` and ``extract``, see
kg/extract.py ``Extractor``). Kept apart from kg/extract.py so the CLI can list the names
without importing the extraction code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from localrag.registry import Registry

if TYPE_CHECKING:
    from localrag.kg.extract import Extractor

EXTRACTORS: Registry[Callable[[], "Extractor"]] = Registry("extractor", "localrag.extractors", {
    "rules": "localrag.kg.extract:RulesExtractor",
    "llm": "localrag.kg.extract:LLMExtractor",
    "llm+rules": "localrag.kg.extract:LLMWithRulesExtractor",
})
