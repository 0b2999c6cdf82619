"""All SQL lives in localrag/store/: no SQL text anywhere else in the packages or the scripts."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("localrag", "bench/localrag_bench", "scripts")
STORE = ROOT / "localrag" / "store"
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA|WITH|BEGIN|COMMIT|ROLLBACK|VACUUM)\b",
                 re.IGNORECASE)
SQL_METHODS = {"execute", "executemany", "executescript", "query", "one", "side_query"}
# a statement's shape, for string constants not passed straight to a call (``sql = "SELECT ..."``)
STATEMENT = re.compile(r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|"
                       r"CREATE\s+(VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)\s|PRAGMA\s+\w+)", re.DOTALL)  # SQL here is upper case; prose is not


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    return None


def sql_outside_store(source: str) -> list[tuple[int, str]]:
    """(line, text) of SQL in this module: a SQL method called with SQL, or a statement-shaped string."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_METHODS and node.args:
            text = _text(node.args[0])
            if text is not None and SQL.match(text):
                found.setdefault(node.lineno, text)
        elif isinstance(node, (ast.Constant, ast.JoinedStr)):
            text = _text(node)
            if text is not None and STATEMENT.match(text):
                found.setdefault(node.lineno, text)
    return sorted(found.items())


def test_the_scan_finds_sql():
    source = 'store.query("SELECT kind FROM edges")\nconn.execute(f"DELETE FROM t WHERE id = {x}")\nsql = "UPDATE t SET a = 1"\n'
    assert [line for line, _ in sql_outside_store(source)] == [1, 2, 3]
    assert sql_outside_store('app.query("#index-state")\nprint("Select a model from the list")\n') == []


def test_no_sql_outside_the_store_package():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if STORE in path.parents:
                continue
            for line, text in sql_outside_store(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}")
    assert offenders == [], "SQL outside localrag/store/:\n" + "\n".join(offenders)
