"""Memory-rounds results: a Markdown table (strategy × round) and a two-panel plot.

Rows come from the per-(strategy, round) summaries of any result file whose records carry
round labels (``bench --rounds``); the change in tokens is against the same strategy's
``first`` round in the same file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from localrag_bench.results import BenchResult, relative_change


@dataclass(frozen=True)
class RoundRow:
    dataset: str
    strategy: str
    round: str
    question_set: str  # "A" / "B", "" when the file has no rounds info
    memory: str  # "on" / "off" / ""
    questions: int
    recall: dict[str, float | None]
    em: float | None
    f1: float | None
    calls: float
    tokens: float
    tokens_change: float | None  # relative to the strategy's `first`; None for `first` itself or without one
    recalled_edges: float | None  # memory recall per question; None when the strategy had no memory step


def has_rounds(result: BenchResult) -> bool:
    return result.rounds is not None or any(s.round for s in result.summaries)


def round_rows(results: Sequence[BenchResult]) -> list[RoundRow]:
    rows: list[RoundRow] = []
    for result in results:
        if not has_rounds(result):
            continue
        stats = {(st.strategy, st.round): st for st in (result.rounds.stats if result.rounds else [])}
        first = {s.strategy: s for s in result.summaries if s.round == "first"}
        for s in result.summaries:
            st = stats.get((s.strategy, s.round))
            base = first.get(s.strategy)
            change = None if base is None or base is s else relative_change(s.tokens_per_q, base.tokens_per_q)
            rows.append(RoundRow(result.dataset, s.strategy, s.round, st.question_set if st else "",
                                 st.memory if st else "", s.questions, s.recall, s.em, s.f1, s.llm_calls_per_q,
                                 s.tokens_per_q, change, s.memory_per_q.get("recalled_edges") if s.memory_per_q else None))
    return rows


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f} %".replace("-", "−")


def markdown_rounds(results: Sequence[BenchResult]) -> str:
    """One row per data set × strategy × round, for docs/benchmarks.md."""
    rows = round_rows(results)
    if not rows:
        raise ValueError("no memory rounds in these result files (run `localrag bench --rounds ...`)")
    lines = ["| dataset | strategy | round | set | memory | n | recall@2 | recall@5 | EM | F1 | LLM calls/q | "
             "tokens/q | tokens vs first |",
             "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.dataset} | {r.strategy} | {r.round} | {r.question_set or '–'} | {r.memory or '–'} | "
                     f"{r.questions} | {_fmt(r.recall.get('2'))} | {_fmt(r.recall.get('5'))} | {_fmt(r.em)} | "
                     f"{_fmt(r.f1)} | {r.calls:.2f} | {r.tokens:,.0f} | {_pct(r.tokens_change)} |")
    return "\n".join(lines)


def rounds_table(result: BenchResult) -> Table:
    """The terminal view of one rounds run, with what memory held after each round."""
    stats = {(st.strategy, st.round): st for st in (result.rounds.stats if result.rounds else [])}
    summaries = {(s.strategy, s.round): s for s in result.summaries}
    title = f"{result.dataset}: memory rounds, {result.index.passages:,} passages"
    if result.rounds:
        m = result.rounds.memory
        title += (f" · set A {len(result.rounds.set_a)} / B {len(result.rounds.set_b)} questions · penalty "
                  f"{m.penalty}, α {m.alpha}, λ {m.lam}, knn recall {'on' if m.knn_recall else 'off'}")
    table = Table(title=escape(title), title_justify="left")
    left = {"strategy", "round", "set", "memory", "tokens/q by phase"}
    names = ["strategy", "round", "set", "memory", "n", "R@2", "R@5"] + (["EM", "F1"] if result.answer else []) + \
        ["LLM calls/q", "tokens/q", "vs first", "tokens/q by phase", "recalled edges/q", "reinforced after",
         "p50 ms", "errors"]
    for name in names:
        table.add_column(name, justify="left" if name in left else "right")
    for r in round_rows([result]):
        st, s = stats.get((r.strategy, r.round)), summaries[(r.strategy, r.round)]
        row = [r.strategy, r.round, r.question_set or "–", r.memory or "–", str(r.questions), _fmt(r.recall.get("2")),
               _fmt(r.recall.get("5"))]
        if result.answer:
            row += [_fmt(r.em), _fmt(r.f1)]
        phases = " ".join(f"{p} {v:,.0f}" for p, v in s.tokens_by_phase_per_q.items()) or "–"
        row += [f"{r.calls:.2f}", f"{r.tokens:,.0f}", _pct(r.tokens_change), phases, _fmt(r.recalled_edges, 2),
                str(st.memory_after.reinforced) if st else "–", f"{s.ms_p50:.1f}", str(s.errors)]
        table.add_row(*(escape(cell) for cell in row))
    return table


def print_rounds_result(result: BenchResult, console: Console) -> None:
    """A rounds run in the terminal: the table, then the index, the reference and the notes."""
    console.print(rounds_table(result))
    info = result.index
    refs = " · ".join(f"{ref.name} R@5 {_fmt(ref.recall.get('5'))} ({ref.questions} questions)"
                      for ref in result.reference)
    console.print(escape(
        f"index {info.db_path}: {info.documents:,} notes, {info.passages:,} passages, sync {info.sync_seconds:.2f} s "
        f"({'changed' if info.sync_changed else 'unchanged'}); graph: {info.graph or 'not needed'}; retrieval depth "
        f"{result.depth} passages; load {result.machine.load_before} -> {result.machine.load_after} on "
        f"{result.machine.cpus} CPUs" + (f"; {refs}" if refs else "")), style="dim")
    if result.rounds:
        console.print(escape(f"sets: {result.rounds.split}; {result.rounds.reset}; {result.rounds.query_cache}"),
                      style="dim")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")


def plot_rounds(results: Sequence[BenchResult], out: Path, k: str = "5") -> Path:
    """Left: LLM tokens per question per round (bars, one per strategy); right: recall@k per round (lines)."""
    # lazy: matplotlib is a heavy import that only the plots need
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as above (after choosing the Agg backend)

    rows = round_rows(results)
    if not rows:
        raise ValueError("no memory rounds in these result files (run `localrag bench --rounds ...`)")
    several = len({r.dataset for r in rows}) > 1
    series = list(dict.fromkeys(f"{r.strategy} ({r.dataset})" if several else r.strategy for r in rows))
    rounds = list(dict.fromkeys(r.round for r in rows))
    by_key = {(f"{r.strategy} ({r.dataset})" if several else r.strategy, r.round): r for r in rows}
    fig, (bars_ax, line_ax) = plt.subplots(1, 2, figsize=(max(9.0, 2.0 + 1.6 * len(rounds) * 2), 4.2))
    width = 0.8 / max(len(series), 1)
    for i, name in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(rounds))]
        ys = [by_key[(name, rd)].tokens if (name, rd) in by_key else 0.0 for rd in rounds]
        drawn = bars_ax.bar(xs, ys, width * 0.95, label=name)
        for bar, rd, y in zip(drawn, rounds, ys):
            if (name, rd) in by_key:
                bars_ax.annotate(f"{y:,.0f}", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom",
                                 fontsize=7)
        pts = [(x, by_key[(name, rd)].recall.get(k)) for x, rd in enumerate(rounds) if (name, rd) in by_key]
        pts = [(x, y) for x, y in pts if y is not None]
        if pts:
            line_ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=name)
    for ax in (bars_ax, line_ax):
        ax.set_xticks(range(len(rounds)), rounds, rotation=15)
        ax.set_xlim(-0.6, len(rounds) - 0.4)
    bars_ax.set_ylabel("LLM tokens per question")
    bars_ax.set_title("Tokens per question by round")
    line_ax.set_ylabel(f"recall@{k}")
    line_ax.set_ylim(0, 1.05)
    line_ax.set_title(f"Passage recall@{k} by round")
    bars_ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return out
