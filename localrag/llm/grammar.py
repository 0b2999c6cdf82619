"""Constrained decoding to a fixed set of strings: a GBNF grammar for llama.cpp, a JSON schema for servers.

The grammar is right-linear (a radix trie of the choices: each rule is a literal, or a
literal followed by another rule), so llama.cpp can emit nothing but one whole choice,
and its language can be read back exactly (``grammar_language``, used by the tests).
"""

from __future__ import annotations

import re
from typing import Sequence


def _escape_char(ch: str) -> str:
    if ch in '"\\':
        return "\\" + ch
    if ch.isprintable() and ch not in "\u2028\u2029":
        return ch
    code = ord(ch)  # control and other non-printing characters: GBNF's \x / \u / \U escapes
    return f"\\x{code:02X}" if code < 0x100 else (f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}")


def _literal(text: str) -> str:
    return '"' + "".join(_escape_char(ch) for ch in text) + '"'


class _Node:
    __slots__ = ("edges", "terminal")

    def __init__(self) -> None:
        self.edges: dict[str, _Node] = {}
        self.terminal = False


def _radix(texts: Sequence[str]) -> _Node:
    root = _Node()
    for text in texts:
        node, rest = root, text
        while True:
            if not rest:
                node.terminal = True
                break
            label = next((k for k in node.edges if k[0] == rest[0]), None)
            if label is None:
                leaf = _Node()
                leaf.terminal = True
                node.edges[rest] = leaf
                break
            common = 0
            while common < min(len(label), len(rest)) and label[common] == rest[common]:
                common += 1
            child = node.edges[label]
            if common < len(label):  # split the edge
                mid = _Node()
                mid.edges[label[common:]] = child
                del node.edges[label]
                node.edges[label[:common]] = mid
                child = mid
            node, rest = child, rest[common:]
    return root


def choice_grammar(texts: Sequence[str]) -> str:
    """A GBNF grammar whose language is exactly ``texts`` (each rule: literal, or literal then a rule)."""
    if not texts or any(not t for t in texts):
        raise ValueError("a choice grammar needs at least one choice and no empty choice")
    root = _radix(texts)
    rules: list[str] = []
    names: dict[int, str] = {}

    def name(node: _Node) -> str:
        if id(node) not in names:
            names[id(node)] = "root" if node is root else f"n{len(names)}"
            alternatives = []
            for label, child in sorted(node.edges.items()):
                if child.terminal:
                    alternatives.append(_literal(label))
                if child.edges:
                    alternatives.append(f"{_literal(label)} {name(child)}")
            rules.append(f"{names[id(node)]} ::= " + " | ".join(alternatives))
        return names[id(node)]

    name(root)
    rules.sort(key=lambda r: (not r.startswith("root "), r))
    return "\n".join(rules) + "\n"


def choice_schema(texts: Sequence[str]) -> dict:
    """The same constraint as JSON schema, for served backends (response_format / guided decoding)."""
    return {"title": "short_answer", "type": "object", "additionalProperties": False, "required": ["answer"],
            "properties": {"answer": {"type": "string", "enum": list(texts)}}}


_RULE = re.compile(r'^(\w+) ::= (.*)$')
_ALT = re.compile(r'"((?:[^"\\]|\\.)*)"(?: (\w+))?')


def _unescape(text: str) -> str:
    return re.sub(r"\\(x[0-9A-F]{2}|u[0-9A-F]{4}|U[0-9A-F]{8}|.)",
                  lambda m: chr(int(m.group(1)[1:], 16)) if len(m.group(1)) > 1 else m.group(1), text)


def grammar_language(grammar: str) -> set[str]:
    """Every string a grammar from ``choice_grammar`` admits (it is finite by construction)."""
    rules: dict[str, list[tuple[str, str | None]]] = {}
    for line in grammar.strip("\n").split("\n"):
        m = _RULE.match(line)
        if not m:
            raise ValueError(f"not a choice-grammar rule: {line!r}")
        rules[m.group(1)] = [(_unescape(a.group(1)), a.group(2)) for a in _ALT.finditer(m.group(2))]

    def expand(rule: str) -> set[str]:
        out: set[str] = set()
        for literal, ref in rules[rule]:
            out |= {literal} if ref is None else {literal + rest for rest in expand(ref)}
        return out

    return expand("root")
