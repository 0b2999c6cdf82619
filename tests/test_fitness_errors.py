"""House rule: every exception localrag defines derives from LocalragError (localrag/errors.py), so
describe_error reports it through the base: its message, one line, and its class's exit code.

The classes are found by parsing localrag/ (no import: optional extras and the TUI stay unloaded).
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from localrag.commands.common import UsageError, UserError, describe_error
from localrag.config import ConfigError
from localrag.errors import LocalragError

PACKAGE = Path(__file__).resolve().parents[1] / "localrag"
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}
# BaseException, not Exception, on purpose: no `except Exception` on the way may count them as failures
SIGNALS = {"Interrupted"}


def _classes() -> list[tuple[str, str, list[str]]]:
    """(module path, name, the names of its bases) for every class defined in localrag/."""
    found: list[tuple[str, str, list[str]]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                found.append((str(path.relative_to(PACKAGE.parent)), node.name, bases))
    return found


def _ancestors(bases: list[str], by_name: dict[str, set[str]]) -> set[str]:
    """Every class name above ``bases``, through the classes of localrag/ (two of one name: both)."""
    out: set[str] = set()
    todo = list(bases)
    while todo:
        base = todo.pop()
        if base not in out:
            out.add(base)
            todo.extend(by_name.get(base, ()))
    return out


def test_every_exception_class_derives_from_localrag_error():
    classes = _classes()
    by_name: dict[str, set[str]] = {}
    for _, name, bases in classes:
        by_name.setdefault(name, set()).update(bases)
    exceptions = [(path, name, _ancestors(bases, by_name)) for path, name, bases in classes
                  if _ancestors(bases, by_name) & BUILTIN_EXCEPTIONS]
    assert {"ConfigError", "LLMError", "SkipFile", "UsageError", "Interrupted"} <= {name for _, name, _ in exceptions}
    outside = [f"{path}: {name}" for path, name, above in exceptions
               if name not in SIGNALS | {"LocalragError"} and "LocalragError" not in above]
    assert outside == [], "derive these from localrag.errors.LocalragError"
    assert all("Exception" not in above and "LocalragError" not in above
               for _, name, above in exceptions if name in SIGNALS)


@pytest.mark.parametrize(("exc", "code"), [
    (UsageError("notes folder not found: x"), 2),
    (UserError("x is not indexed yet"), 1),
    (ConfigError("neuropath.merge must be one of paths-first, fused; got 'fusd'"), 1),
])
def test_a_localrag_error_is_its_message_and_its_class_exit_code(exc: LocalragError, code: int):
    assert describe_error(exc) == (code, str(exc))


def test_the_errors_of_the_pipeline_are_their_message_with_exit_1():
    from localrag.api import EmptyIndexError
    from localrag.embed import EmbedderError
    from localrag.llm.base import LLMError
    from localrag.llm.discovery import UnknownModel
    from localrag.registry import PluginError, UnknownPlugin
    from localrag.store import StoreError
    from localrag.store.lock import LockBusy

    for cls in (EmptyIndexError, EmbedderError, LLMError, UnknownModel, StoreError, LockBusy, UnknownPlugin, PluginError):
        assert describe_error(cls("what to do")) == (1, "what to do"), cls


def test_an_internal_error_that_escapes_is_described_as_a_bug():
    from localrag.retrieve.filters import FilterError
    from localrag.retrieve.remind.calls import BudgetSpent

    for cls in (FilterError, BudgetSpent):
        code, message = describe_error(cls("spent"))
        assert code == 1 and message.startswith(f"unexpected {cls.__name__}: spent") and "--debug" in message
