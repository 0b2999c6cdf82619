"""`bench scale --graph`: the graph phase and graph retrieval on a generated vault of N passages.

The corpus (bench/localrag_bench/graph_corpus.py) has the entity structure of real notes. Steps, each
timed in wall and CPU seconds (the machine may be shared: both are reported, with the
load average):

1. fast phase (walk, chunk, embed, store) into ``fast.db``, kept for later runs;
2. graph phase with the rules extractor on a copy of it: passages/s, tokens/s, the time
   per step (rules, entity-name embedding, coreference, writes, saving the walk
   matrix), peak RSS, DB size;
3. an unchanged re-index in a fresh process, and an edit of one file (re-sync plus graph
   phase: how many passages were extracted again);
4. query latency p50/p95, warm: ``ppr``, any strategy named in GRAPH_STRATEGIES that is
   registered (the no-LLM ``graph`` fusion when it exists), and NeuroPath with an instant
   scripted model (bench/localrag_bench/instant_llm.py: what is left is NeuroPath's own work: seeds,
   path pruning, completion);
5. a cold ``localrag ask --no-answer --strategy ppr`` in a new process.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.embed import default_embedder
from localrag.kg.builder import extraction_text
from localrag.kg.entity_graph import entity_graph
from localrag.retrieve.base import strategy_names
from localrag.records import Trace
from localrag.retrieve.ppr import GraphStep
from localrag.text.words import WORDISH
from localrag_bench.graph_corpus import GraphNote, generate_graph_corpus, write_graph_corpus
from localrag_bench.instant_llm import InstantLLM
from localrag_bench.results import MachineInfo, machine_info
from localrag_bench.scale import Latency, Timings, _clear_query_cache, resync_in_fresh_process
from localrag_bench.workdir import bench_cache_root, copy_index, remove_db, rss_mb

GRAPH_STRATEGIES = ("ppr", "graph")  # "graph": the no-LLM fusion, timed when registered
FAST_DB, FAST_RUN = "fast.db", "fast_run.json"


@dataclass
class PhaseFigures:
    passages: int
    tokens: int  # the chunker's word-tokens (regex count) of those passages
    wordpieces: int  # MiniLM wordpieces of their embedded text
    seconds: float
    cpu_seconds: float
    load: list[float]  # load average when the phase ended

    @property
    def per_s(self) -> float:
        return self.passages / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, float]:
        s, c = self.seconds or 1e-9, self.cpu_seconds or 1e-9
        return {"passages_per_s": round(self.passages / s, 1), "tokens_per_s": round(self.tokens / s, 1),
                "wordpieces_per_s": round(self.wordpieces / s, 1), "passages_per_cpu_s": round(self.passages / c, 1),
                "tokens_per_cpu_s": round(self.tokens / c, 1)}


@dataclass
class EditFigures:
    sync_seconds: float
    graph_seconds: float
    graph_passages: int  # passages the graph phase extracted again
    file_passages: int  # passages of the edited file
    matrix_how: str  # how a new reader got the walk matrix afterwards


@dataclass
class GraphScaleResult:
    passages: int
    files: int
    indexed_passages: int
    fast: PhaseFigures
    graph: PhaseFigures
    graph_steps: dict[str, float]  # seconds per step (embed runs on a worker thread: it overlaps)
    graph_counts: dict[str, int]
    peak_rss_mb_fast: float
    peak_rss_mb_graph: float
    db_bytes: int
    resync_seconds: float
    resync_process_seconds: float
    edit: EditFigures
    latency: list[Latency]
    cold_ask_seconds: float
    cold_ask_graph_loaded: str
    machine: MachineInfo
    created: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["fast"]["rates"] = self.fast.summary()
        out["graph"]["rates"] = self.graph.summary()
        return out




def rules_index(work: Path, db: Path, embedder: Any = None, folder: Path | None = None, **overrides: Any) -> Index:
    """The index ``db`` of the notes in ``folder`` (default ``work/notes``), with the rules extractor
    (no model) unless overridden."""
    settings = load_settings(folder or work / "notes", {"db": str(db), "index.extractor": "rules", **overrides}, env={})
    return Index(settings, embedder)


TOKEN_COUNT_BATCH = 1000  # passages read and tokenised at a time


def _token_totals(store: Any, embedder: Any) -> tuple[int, int]:
    """Words and wordpieces of every passage, read a batch at a time: the peak RSS reported for a
    phase must be the product's, and the whole folder's passages with their tokenizer encodings at
    once (55,925 tldr passages) weigh more than the product's own growth."""
    ids = store.docs.all_passage_ids()
    counter = getattr(embedder, "window_counter", None)
    words = pieces = 0
    for start in range(0, len(ids), TOKEN_COUNT_BATCH):
        passages = store.docs.passages(ids[start:start + TOKEN_COUNT_BATCH])
        words += sum(len(WORDISH.findall(p.text)) for p in passages)
        if callable(counter):
            pieces += sum(counter()[0]([extraction_text(p) for p in passages]))
    return words, pieces


def _timed_phase(index: Index, run: Callable[[], Any], passages_of: Callable[[Any], int]) -> tuple[PhaseFigures, Any]:
    """``run()``'s wall and CPU seconds with the index's token totals and the load after it; and its report."""
    started, cpu = time.perf_counter(), time.process_time()
    report = run()
    seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    words, pieces = _token_totals(index.store, index.embedder)
    return PhaseFigures(passages_of(report), words, pieces, round(seconds, 2), round(cpu_s, 2),
                        [round(x, 2) for x in os.getloadavg()]), report


def fast_phase(work: Path, notes: list[GraphNote], embedder: Any, fresh: bool,
               log: Callable[[str], None]) -> tuple[PhaseFigures, float]:
    """The fast phase into work/fast.db (reused when it exists, with the figures recorded then)."""
    db, record = work / FAST_DB, work / FAST_RUN
    if fresh:
        remove_db(db)
        record.unlink(missing_ok=True)
    if db.is_file() and record.is_file():
        data = json.loads(record.read_text())
        return PhaseFigures(**data["figures"]), float(data["rss_mb"])
    remove_db(db)
    index = rules_index(work, db, embedder)
    try:
        log(f"fast phase: {sum(len(n.passages) for n in notes):,} passages")
        figures, _ = _timed_phase(index, index.sync, lambda report: report.passages_added)
    finally:
        index.close()
    record.write_text(json.dumps({"figures": asdict(figures), "rss_mb": rss_mb()}))
    return figures, rss_mb()


def graph_phase(work: Path, embedder: Any, log: Callable[[str], None],
                folder: Path | None = None) -> tuple[PhaseFigures, dict, dict, int]:
    """The rules graph phase on a fresh copy of fast.db: figures, seconds per step, row counts, db bytes."""
    index = rules_index(work, copy_index(work / FAST_DB, work / "index.db"), embedder, folder)
    try:
        queued = index.store.graph.queue.length()
        log(f"graph phase (rules): {queued:,} passages queued")
        figures, report = _timed_phase(index, index.extract_graph, lambda report: report.passages)
        steps = {k: round(v, 2) for k, v in sorted(report.steps.seconds.items())}
        counts = index.graph_figures()
        size = index.store.size_bytes()
    finally:
        index.close()
    return figures, steps, counts, size


def edit_one_file(work: Path, notes: list[GraphNote], embedder: Any) -> EditFigures:
    """Append a sentence to one note; re-sync and run the graph phase; count what was redone."""
    note = notes[len(notes) // 2]
    path = work / "notes" / note.name
    original = path.read_text()
    path.write_text(original.rstrip("\n") + "\n\nLater, Ada Lovelace visited the archive of Upper Glenrock.\n")
    index = rules_index(work, work / "index.db", embedder)
    try:
        sync = index.sync()
        report = index.extract_graph()
        file_passages = len(index.store.docs.passages_of(note.name))
    finally:
        index.close()
        path.write_text(original)  # the corpus stays as generated (the next sync puts the passages back)
    reader = rules_index(work, work / "index.db", embedder)
    try:
        how = entity_graph(reader.store).how
    finally:
        reader.close()
    return EditFigures(round(sync.seconds, 3), round(report.seconds, 3), report.passages, file_passages, how)


def cold_ask(work: Path, question: str) -> tuple[float, str]:
    """`localrag ask --no-answer --strategy ppr --json` in a new process: wall seconds, how the graph was loaded."""
    cmd = [sys.executable, "-m", "localrag", "ask", question, "--no-answer", "--strategy", "ppr", "--json",
           "--folder", str(work / "notes"), "--db", str(work / "index.db")]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"the cold ask failed: {proc.stderr.strip()[-800:]}")
    how = ""
    try:
        trace = Trace.from_json(json.loads(proc.stdout).get("trace", {}))
        how = next((s.loaded for s in trace.steps if isinstance(s, GraphStep)), "")
    except (ValueError, AttributeError):
        pass
    return wall, how


def query_latency(work: Path, notes: list[GraphNote], embedder: Any, n_queries: int, seed: int, k: int,
                  log: Callable[[str], None], neuropath_queries: int | None = None) -> list[Latency]:
    questions = [p.question for n in notes for p in n.passages]
    chosen = random.Random(seed).sample(questions, min(n_queries, len(questions)))
    settings = load_settings(work / "notes", {"db": str(work / "index.db"), "memory.enabled": False}, env={})
    index = Index(settings, embedder)
    out: list[Latency] = []
    try:
        assistant = Assistant(index, llm=InstantLLM())
        for q in chosen:
            index.embedder.encode_one(q)  # warm: the query vectors are memoised, retrieval alone is timed
        names = [s for s in GRAPH_STRATEGIES if s in strategy_names()] + ["neuropath"]
        for name in names:
            asked = chosen[:neuropath_queries] if name == "neuropath" and neuropath_queries else chosen
            log(f"timing {name} over {len(asked)} queries")
            for _ in range(2):  # loads the graph and the entity lookup (built from a process's second lookup on)
                assistant.retrieve(chosen[0], name, k)
            t = Timings()
            for q in asked:
                t.timed(lambda: assistant.retrieve(q, name, k))
            label = f"{name} (instant scripted model)" if name == "neuropath" else f"{name}, warm"
            out.append(t.latency(label))
        _clear_query_cache(index.embedder)
    finally:
        index.close()
    return out


def run_graph_scale(n_passages: int, n_queries: int = 100, work_dir: Path | None = None, *, seed: int = 11,
                    fresh: bool = False, embedder: Any = None, k: int = 10,
                    log: Callable[[str], None] = lambda s: None) -> GraphScaleResult:
    if n_passages < 1 or n_queries < 1:
        raise ValueError("--passages and --queries must be at least 1")
    machine = machine_info()
    work = (work_dir or _default_dir(n_passages, seed)).expanduser().resolve()
    log(f"generating {n_passages:,} passages in {work / 'notes'}")
    notes = generate_graph_corpus(n_passages, seed)
    write_graph_corpus(work / "notes", notes)
    embedder = embedder or default_embedder()
    fast, rss_fast = fast_phase(work, notes, embedder, fresh, log)
    graph, steps, counts, size = graph_phase(work, embedder, log)
    rss_graph = rss_mb()
    log("re-index of the unchanged folder, in a fresh process")
    resync_s, resync_wall = resync_in_fresh_process(work / "notes", work / "index.db")
    log("cold ask in a new process")
    cold_s, cold_how = cold_ask(work, notes[0].passages[0].question)
    latency = query_latency(work, notes, embedder, n_queries, seed, k, log)
    log("editing one file")
    edit = edit_one_file(work, notes, embedder)
    machine.load_after = [round(x, 2) for x in os.getloadavg()]
    indexed = fast.passages
    return GraphScaleResult(
        passages=n_passages, files=len(notes), indexed_passages=indexed, fast=fast, graph=graph, graph_steps=steps,
        graph_counts=counts, peak_rss_mb_fast=round(rss_fast, 1), peak_rss_mb_graph=round(rss_graph, 1),
        db_bytes=size, resync_seconds=round(resync_s, 3), resync_process_seconds=round(resync_wall, 3), edit=edit,
        latency=latency, cold_ask_seconds=round(cold_s, 3), cold_ask_graph_loaded=cold_how, machine=machine,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        notes=[f"the chunker made {indexed:,} passages of the {n_passages:,} generated"] if indexed != n_passages else [],
    )


@dataclass
class FolderScaleResult:
    """``--notes DIR``: both indexing phases on a folder of real notes (no generated questions, no edit)."""

    folder: str
    files: int
    fast: PhaseFigures
    graph: PhaseFigures
    graph_steps: dict[str, float]
    graph_counts: dict[str, int]
    peak_rss_mb_fast: float
    peak_rss_mb_graph: float
    db_bytes: int
    machine: MachineInfo
    created: str

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["fast"]["rates"] = self.fast.summary()
        out["graph"]["rates"] = self.graph.summary()
        return out


def run_folder_scale(folder: Path, work: Path | None, *, embedder: Any = None,
                     log: Callable[[str], None] = lambda s: None) -> FolderScaleResult:
    """The fast phase from scratch, then the rules graph phase, on ``folder``; the index in ``work``
    (None: a new temporary folder)."""
    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise ValueError(f"--notes: no folder {folder}")
    work = work.expanduser().resolve() if work else Path(tempfile.mkdtemp(prefix="localrag-scale-notes-"))
    work.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    embedder = embedder or default_embedder()
    db = work / FAST_DB
    remove_db(db)
    index = rules_index(work, db, embedder, folder)
    try:
        log(f"fast phase: {folder}")
        fast, _ = _timed_phase(index, index.sync, lambda r: r.passages_added)
        files = index.store.docs.count()
    finally:
        index.close()
    rss_fast = rss_mb()
    graph, steps, counts, size = graph_phase(work, embedder, log, folder)
    machine.load_after = [round(x, 2) for x in os.getloadavg()]
    return FolderScaleResult(str(folder), files, fast, graph, steps, counts, round(rss_fast, 1), round(rss_mb(), 1), size,
                             machine, _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


@dataclass
class GraphLatencyResult:
    """``--queries-only``: query latency and cold asks again, on the index an earlier run left."""

    passages: int
    indexed_passages: int
    latency: list[Latency]
    cold_ask_seconds: list[float]  # one new process each
    cold_ask_graph_loaded: str
    machine: MachineInfo
    created: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_graph_latency(n_passages: int, n_queries: int, work_dir: Path | None = None, *, seed: int = 11,
                      neuropath_queries: int | None = None, cold_asks: int = 5, embedder: Any = None, k: int = 10,
                      log: Callable[[str], None] = lambda s: None) -> GraphLatencyResult:
    work = (work_dir or _default_dir(n_passages, seed)).expanduser().resolve()
    if not (work / "index.db").is_file():
        raise ValueError(f"no index in {work}: run `bench scale --graph` there first (--queries-only re-times it)")
    machine = machine_info()
    notes = generate_graph_corpus(n_passages, seed)
    write_graph_corpus(work / "notes", notes)  # as generated: unchanged files are not re-read
    cold: list[float] = []
    how = ""
    for i in range(cold_asks):
        log(f"cold ask {i + 1} of {cold_asks} in a new process")
        seconds, how = cold_ask(work, notes[0].passages[0].question)
        cold.append(round(seconds, 3))
    embedder = embedder or default_embedder()
    latency = query_latency(work, notes, embedder, n_queries, seed, k, log, neuropath_queries)
    index = rules_index(work, work / "index.db", embedder)
    try:
        indexed = len(index.store.docs.all_passage_ids())
    finally:
        index.close()
    machine.load_after = [round(x, 2) for x in os.getloadavg()]
    return GraphLatencyResult(n_passages, indexed, latency, cold, how, machine,
                              _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def _default_dir(n_passages: int, seed: int) -> Path:
    return bench_cache_root() / f"scale-graph-{n_passages}-seed{seed}"


def write_graph_scale_result(result: GraphScaleResult | GraphLatencyResult | FolderScaleResult, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_json(), indent=1) + "\n", encoding="utf-8")
    return path
