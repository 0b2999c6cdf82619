"""Static structure figures of the source tree: the before/after numbers of a refactor.

    python scripts/code_metrics.py [--root localrag] [--root bench/localrag_bench] [--json]

Per package: modules and lines. Over the whole tree: import cycles between packages
and between modules (module-level imports only, the ones that run at import time),
function-local imports (with the reason given in a comment on the line or the line
above, if any), median and p90 function length, and the share of functions whose
parameters and return are all annotated.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import networkx as nx


@dataclass
class LocalImport:
    module: str
    line: int
    target: str
    comment: str


@dataclass
class TreeMetrics:
    packages: dict[str, tuple[int, int]] = field(default_factory=dict)
    modules: int = 0
    lines: int = 0
    package_cycles: list[list[str]] = field(default_factory=list)
    module_cycles: list[list[str]] = field(default_factory=list)
    local_imports: list[LocalImport] = field(default_factory=list)
    functions: int = 0
    median_function_lines: float = 0.0
    p90_function_lines: float = 0.0
    typed_share: float = 0.0


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_of(module: str, is_package: bool) -> str:
    """The package a module belongs to: `a.b.c` -> `a.b`; a package is its own."""
    return module if is_package else module.rsplit(".", 1)[0]


def resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = package_of(module, is_package).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_targets(module: str, is_package: bool, node: ast.stmt, known: set[str]) -> list[str]:
    """The project modules an import statement loads (a `from pkg import mod` loads pkg.mod)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        source = resolve_from(module, is_package, node)
        names = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
    else:
        return []
    found = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(tree: ast.Module) -> list[ast.stmt]:
    """Imports that run when the module is imported (TYPE_CHECKING blocks excluded)."""
    found: list[ast.stmt] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and not is_type_checking(node):
            stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                stack.extend(handler.body)
    return found


def functions_of(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def fully_typed(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    if args and args[0].arg in ("self", "cls"):
        args = args[1:]
    extras = [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
    return fn.returns is not None and all(a.annotation is not None for a in args + extras)


def line_comment(lines: list[str], lineno: int) -> str:
    """The reason given for an import: a comment on its line, or on the line just above the
    block of imports it belongs to."""
    if "#" in lines[lineno - 1]:
        return lines[lineno - 1].split("#", 1)[1].strip()
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith(("from ", "import ")) and "#" not in lines[index]:
        index -= 1
    above = lines[index].strip() if index >= 0 else ""
    return above[1:].strip() if above.startswith("#") else ""


def measure(roots: list[Path]) -> TreeMetrics:
    metrics = TreeMetrics()
    trees: dict[str, tuple[ast.Module, bool, list[str]]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text()
            name = module_name(path, root.parent)
            trees[name] = (ast.parse(text), path.name == "__init__.py", text.splitlines())
    known = set(trees)
    per_package: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    lengths: list[int] = []
    typed = 0
    modules = nx.DiGraph()
    packages = nx.DiGraph()
    for name, (tree, is_package, lines) in trees.items():
        package = package_of(name, is_package)
        per_package[package][0] += 1
        per_package[package][1] += len(lines)
        modules.add_node(name)
        for node in module_level_imports(tree):
            for target in import_targets(name, is_package, node, known):
                if target == name:
                    continue
                modules.add_edge(name, target)
                target_package = package_of(target, trees[target][1])
                # a package importing its own subpackage is structure, not a cycle
                if target_package != package and not target_package.startswith(package + "."):
                    if not package.startswith(target_package + "."):
                        packages.add_edge(package, target_package)
        for fn in functions_of(tree):
            lengths.append((fn.end_lineno or fn.lineno) - fn.lineno + 1)
            typed += fully_typed(fn)
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    targets = import_targets(name, is_package, node, known)
                    label = targets[0] if targets else ", ".join(a.name for a in node.names)
                    if isinstance(node, ast.ImportFrom) and not targets:
                        label = node.module or label
                    metrics.local_imports.append(
                        LocalImport(name, node.lineno, label, line_comment(lines, node.lineno))
                    )
    metrics.packages = {k: (v[0], v[1]) for k, v in sorted(per_package.items())}
    metrics.modules = len(trees)
    metrics.lines = sum(v[1] for v in per_package.values())
    metrics.package_cycles = [sorted(c) for c in nx.strongly_connected_components(packages) if len(c) > 1]
    metrics.module_cycles = [sorted(c) for c in nx.strongly_connected_components(modules) if len(c) > 1]
    metrics.functions = len(lengths)
    if lengths:
        metrics.median_function_lines = statistics.median(lengths)
        metrics.p90_function_lines = statistics.quantiles(lengths, n=10)[-1] if len(lengths) > 1 else lengths[0]
        metrics.typed_share = typed / len(lengths)
    return metrics


def project_local(item: LocalImport, known_prefixes: tuple[str, ...]) -> bool:
    return item.target.startswith(known_prefixes)


def print_report(metrics: TreeMetrics, prefixes: tuple[str, ...]) -> None:
    print(f"{'package':34} {'modules':>7} {'lines':>7}")
    for package, (count, lines) in metrics.packages.items():
        print(f"{package:34} {count:7d} {lines:7d}")
    print(f"{'total':34} {metrics.modules:7d} {metrics.lines:7d}")
    print(f"package cycles: {len(metrics.package_cycles)} {metrics.package_cycles}")
    print(f"module cycles: {len(metrics.module_cycles)} {metrics.module_cycles}")
    local = metrics.local_imports
    own = [i for i in local if project_local(i, prefixes)]
    print(f"function-local imports: {len(local)} ({len(own)} of project modules, "
          f"{sum(1 for i in own if not i.comment)} of them without a comment)")
    for item in own:
        print(f"  {item.module}:{item.line} -> {item.target}  # {item.comment}")
    print(f"functions: {metrics.functions}, median {metrics.median_function_lines:g} lines, "
          f"p90 {metrics.p90_function_lines:g}, fully typed {metrics.typed_share:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", action="append", type=Path, help="package directory (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    roots = [r for r in (args.root or [Path("localrag"), Path("bench/localrag_bench")]) if r.exists()]
    metrics = measure(roots)
    if args.json:
        print(json.dumps(asdict(metrics), indent=1))
    else:
        print_report(metrics, tuple(r.name for r in roots))


if __name__ == "__main__":
    main()
