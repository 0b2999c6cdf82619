"""Show benchmark results: rich tables in the terminal, Markdown for the docs, grouped-bar plots."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from localrag_bench.results import BenchResult, StrategySummary


REFERENCE_LABEL = "bm25 (same questions)"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _label(s: StrategySummary) -> str:
    return f"{s.strategy} [{s.round}]" if s.round else s.strategy


def _phases(s: StrategySummary) -> str:
    return " ".join(f"{p} {v:,.0f}" for p, v in s.tokens_by_phase_per_q.items()) or "–"


def result_table(result: BenchResult) -> Table:
    ks = sorted({k for s in result.summaries for k in s.recall} | {k for r in result.reference for k in r.recall}, key=int)
    table = Table(title=f"{result.dataset}: {result.questions} questions, {result.index.passages:,} passages "
                        f"({result.corpus_passages:,} corpus docs)", title_justify="left")
    table.add_column("strategy")
    table.add_column("n", justify="right")
    for k in ks:
        table.add_column(f"R@{k}", justify="right")
    if result.answer:
        table.add_column("EM", justify="right")
        table.add_column("F1", justify="right")
    for name in ("LLM calls/q", "tokens/q", "tokens/q by phase", "p50 ms", "p95 ms", "CPU p50 ms", "errors"):
        table.add_column(name, justify="left" if "phase" in name else "right")
    for s in result.summaries:
        row = [escape(_label(s)), str(s.questions), *(_fmt(s.recall.get(k)) for k in ks)]
        if result.answer:
            row += [_fmt(s.em), _fmt(s.f1)]
        row += [f"{s.llm_calls_per_q:.2f}", f"{s.tokens_per_q:,.0f}", _phases(s), f"{s.ms_p50:.1f}", f"{s.ms_p95:.1f}",
                f"{s.cpu_ms_p50:.1f}", str(s.errors)]
        table.add_row(*row)
    for ref in result.reference:
        row = [f"[dim]{ref.name}[/]", f"[dim]{ref.questions}[/]", *(f"[dim]{_fmt(ref.recall.get(k))}[/]" for k in ks)]
        row += [""] * (len(table.columns) - len(row))
        table.add_row(*row)
    return table


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def answer_table(result: BenchResult) -> Table:
    """Per strategy and question type: constrained EM beside the random-choice baseline and free generation."""
    title = f"{result.dataset}: answers by question shape" + (" (gold passages dropped)" if result.drop_gold else "")
    if result.abstain_below:
        title += f", abstain below {result.abstain_below:g}"
    if result.abstain_unnamed_below:
        title += f" (or {result.abstain_unnamed_below:g} with the named things' notes missing)"
    table = Table(title=title, title_justify="left")
    for name in ("strategy", "type", "n", "EM", "random EM", "no-model EM", "free EM", "F1", "free F1", "gold in evidence",
                 "… when R@5=1", "abstained", "evidence p50/p95 ms", "1st token p50/p95 ms", "total p50/p95 ms"):
        table.add_column(name, justify="left" if name in ("strategy", "type") else "right")
    for s in result.summaries:
        for a in s.answers:
            table.add_row(escape(_label(s)), a.question_type, str(a.questions), _fmt(a.em), _fmt(a.random_em),
                          _fmt(a.ranked_em), _fmt(a.free_em), _fmt(a.f1), _fmt(a.free_f1), _fmt(a.gold_in_evidence),
                          _fmt(a.gold_in_evidence_r5), _fmt(a.abstained), f"{_ms(a.evidence_ms_p50)} / {_ms(a.evidence_ms_p95)}",
                          f"{_ms(a.first_token_ms_p50)} / {_ms(a.first_token_ms_p95)}", f"{_ms(a.ms_p50)} / {_ms(a.ms_p95)}",
                          style="bold" if a.question_type == "all" else None)
    return table


def markdown_answers(results: Sequence[BenchResult]) -> str:
    """The answers table of result files, for docs/benchmarks.md (the "all" row of each strategy)."""
    lines = ["| dataset | strategy | model | short answers picked by | n | EM | random-choice EM | no-model EM | "
             "free EM | F1 | gold in evidence (R@5=1) | abstained | evidence p50 ms | 1st token p50 ms | total p50 ms |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        model = r.model.rsplit("/", 1)[-1] if r.model else ""
        for s in r.summaries:
            for a in s.answers[:1]:
                picked = _picked(r, s)
                lines.append(f"| {r.dataset}{' (gold dropped)' if r.drop_gold else ''} | {_label(s)} | {model} | "
                             f"{picked} | {a.questions} | {_fmt(a.em)} | {_fmt(a.random_em)} | "
                             f"{_fmt(a.ranked_em)} | "
                             f"{_fmt(a.free_em)} | {_fmt(a.f1)} | {_fmt(a.gold_in_evidence_r5)} | {_fmt(a.abstained)} | "
                             f"{_ms(a.evidence_ms_p50)} | {_ms(a.first_token_ms_p50)} | {_ms(a.ms_p50)} |")
    return "\n".join(lines)


def _picked(result: BenchResult, summary) -> str:
    """"dates 21 · ranking 27": how the strategy's short answers were picked (older files: "")."""
    counts: dict[str, int] = {}
    for rec in result.records:
        if rec.strategy == summary.strategy and rec.round == summary.round and getattr(rec, "picked_by", ""):
            counts[rec.picked_by] = counts.get(rec.picked_by, 0) + 1
    return " · ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def print_result(result: BenchResult, console: Console) -> None:
    console.print(result_table(result))
    if any(s.answers for s in result.summaries):
        console.print(answer_table(result))
    info = result.index
    console.print(f"[dim]index {info.db_path}: {info.documents:,} notes, {info.passages:,} passages, "
                  f"sync {info.sync_seconds:.2f} s ({'changed' if info.sync_changed else 'unchanged'}); "
                  f"graph: {info.graph or 'not needed'}; retrieval depth {result.depth} passages; "
                  f"load {result.machine.load_before} -> {result.machine.load_after} on {result.machine.cpus} CPUs[/]")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")


@dataclass(frozen=True)
class Cell:
    dataset: str
    label: str  # strategy (and round)
    recall: dict[str, float | None]
    em: float | None
    f1: float | None
    calls: float
    tokens: float
    reference: bool = False
    questions: int = 0


def cells(results: Sequence[BenchResult], with_reference: bool = True) -> list[Cell]:
    """(dataset, strategy) figures across result files; a later file wins for the same pair."""
    out: dict[tuple[str, str], Cell] = {}
    for result in results:
        for s in result.summaries:
            out[(result.dataset, _label(s))] = Cell(result.dataset, _label(s), s.recall, s.em, s.f1,
                                                     s.llm_calls_per_q, s.tokens_per_q, questions=s.questions)
        if with_reference:
            for ref in result.reference:
                if ref.name.startswith("bm25 (reference)"):
                    out[(result.dataset, REFERENCE_LABEL)] = Cell(result.dataset, REFERENCE_LABEL, dict(ref.recall),
                                                                  None, None, 0.0, 0.0, reference=True,
                                                                  questions=ref.questions)
    return list(out.values())


def markdown_table(results: Sequence[BenchResult]) -> str:
    """One row per dataset × strategy, for docs/benchmarks.md."""
    lines = ["| dataset | strategy | recall@2 | recall@5 | EM | F1 | LLM calls/q | tokens/q |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in cells(results):
        lines.append(f"| {c.dataset} | {c.label} | {_fmt(c.recall.get('2'))} | {_fmt(c.recall.get('5'))} | "
                     f"{_fmt(c.em)} | {_fmt(c.f1)} | {c.calls:.2f} | {c.tokens:,.0f} |")
    return "\n".join(lines)


def markdown_pivot(results: Sequence[BenchResult]) -> str:
    """Strategies down, data sets across, "recall@2 / recall@5" in each cell (the reference rows last)."""
    data = cells(results)
    datasets = list(dict.fromkeys(c.dataset for c in data))
    labels = list(dict.fromkeys(c.label for c in data if not c.reference)) + \
        list(dict.fromkeys(c.label for c in data if c.reference))
    by_key = {(c.dataset, c.label): c for c in data}
    lines = ["| strategy | " + " | ".join(f"{d} R@2 / R@5" for d in datasets) + " |",
             "|---|" + "---:|" * len(datasets)]
    for label in labels:
        row = []
        for d in datasets:
            c = by_key.get((d, label))
            row.append(f"{_fmt(c.recall.get('2'))} / {_fmt(c.recall.get('5'))}" if c else "–")
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    refs = {res.dataset: r for res in results for r in res.reference if "README" in r.name}
    if refs:
        row = [f"{_fmt(refs[d].recall.get('2'))} / {_fmt(refs[d].recall.get('5'))}" if d in refs else "–" for d in datasets]
        lines.append("| bm25 (data README, full set) | " + " | ".join(row) + " |")
    return "\n".join(lines)


def plot_recall(results: Sequence[BenchResult], out: Path, k: str = "5", with_reference: bool = True) -> Path:
    """Grouped bars: one group per dataset, one bar per strategy, height = recall@k."""
    # lazy: matplotlib is a heavy import that only the plots need
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as above (after choosing the Agg backend)

    data = cells(results, with_reference)
    if not data:
        raise ValueError("no results to plot")
    datasets = list(dict.fromkeys(c.dataset for c in data))
    labels = list(dict.fromkeys(c.label for c in data if not c.reference)) + \
        list(dict.fromkeys(c.label for c in data if c.reference))
    value = {(c.dataset, c.label): c.recall.get(k) for c in data}
    width = 0.8 / max(len(labels), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + len(datasets) * len(labels) * 0.45), 4.2))
    for i, label in enumerate(labels):
        xs = [d + (i - (len(labels) - 1) / 2) * width for d in range(len(datasets))]
        ys = [value.get((ds, label)) or 0.0 for ds in datasets]
        is_ref = any(c.reference and c.label == label for c in data)
        bars = ax.bar(xs, ys, width * 0.95, label=label, hatch="//" if is_ref else None,
                      color="white" if is_ref else None, edgecolor="grey" if is_ref else None)
        for bar, (ds, y) in zip(bars, zip(datasets, ys)):
            if value.get((ds, label)) is not None:
                ax.annotate(f"{y:.2f}", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=7)
    counts = {c.dataset: c.questions for c in data if not c.reference}
    ax.set_xticks(range(len(datasets)), [f"{d}\n{counts.get(d, 0)} questions" for d in datasets])
    ax.set_ylabel(f"recall@{k}")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Passage recall@{k} per strategy and data set")
    ax.legend(fontsize=8, ncols=min(len(labels), 4), loc="upper center", bbox_to_anchor=(0.5, -0.24), frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return out
