"""House rule: no two classes of localrag/ share a name, so a name in a traceback, a type check
(``isinstance(step, SeedsStep)``), a log or a doc says which class it is without its module.

The classes are found by parsing localrag/ (no import: optional extras and the TUI stay unloaded).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "localrag"


def class_places(source: str, where: str) -> dict[str, list[str]]:
    """Class name -> ``where:line`` of each class of that name defined in ``source``."""
    found: dict[str, list[str]] = defaultdict(list)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            found[node.name].append(f"{where}:{node.lineno}")
    return found


def shared_names(places: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: at for name, at in sorted(places.items()) if len(at) > 1}


def test_no_two_classes_of_localrag_share_a_name():
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, at in class_places(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent))).items():
            places[name] += at
    assert len(places) > 100, "the walk found the package's classes"
    assert shared_names(places) == {}


def test_the_check_sees_two_classes_of_one_name_in_two_modules():
    places: dict[str, list[str]] = defaultdict(list)
    for where, source in (("a.py", "class Turn:\n    pass\n"), ("b.py", "def f():\n    class Turn: ...\n")):
        for name, at in class_places(source, where).items():
            places[name] += at
    assert shared_names(places) == {"Turn": ["a.py:1", "b.py:2"]}
