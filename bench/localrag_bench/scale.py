"""The scale benchmark: a generated corpus of N passages, indexed and queried with the real pipeline.

Reports indexing throughput without an LLM (embedding-bound), the cost of re-syncing
the unchanged folder (timed in a fresh process, as a user re-running ``index`` would),
and per-query latency (p50/p95) of each retriever with and without the query
embedding, plus the store's KNN alone: exact brute force vs the binary-quantised
prefilter with exact rescoring, and the recall@10 of the latter against the former.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.ingest.sync import Progress
from localrag.store.vectors import EXACT_LIMIT
from localrag_bench import vocab
from localrag_bench.metrics import percentile
from localrag_bench.results import MachineInfo, machine_info
from localrag_bench.workdir import bench_cache_root, remove_db, write_if_changed

RETRIEVERS = ("dense", "lexical", "hybrid")
PER_FILE = 100
VEC0_PREFILTER_QUERIES = 50  # the all-vec0 variant is slow at 100k: time it on fewer queries
INDEX_RUN_FILE = "index_run.json"


# -- the corpus --------------------------------------------------------------------
@dataclass(frozen=True)
class SynthPassage:
    heading: str
    text: str


def _person(rng: random.Random) -> str:
    return f"{rng.choice(vocab.FIRST_NAMES)} {rng.choice(vocab.LAST_NAMES)}"


def make_passage(rng: random.Random) -> tuple[SynthPassage, str]:
    """A ~60-word paragraph on one topic, and a question it answers."""
    topic = rng.choice(list(vocab.TOPICS))
    nouns = vocab.TOPICS[topic]
    n1, n2, n3 = rng.sample(nouns, 3)
    person, other = _person(rng), _person(rng)
    place, place2 = rng.sample(vocab.PLACES, 2)
    adj, adj2 = rng.sample(vocab.ADJECTIVES, 2)
    verb, verb2 = rng.sample(vocab.VERBS_PAST, 2)
    org, job = rng.choice(vocab.ORGS), rng.choice(vocab.PROFESSIONS)
    year, year2 = rng.randint(1820, 2020), rng.randint(1820, 2020)
    sentences = [
        f"In {year}, {person} {verb} the {adj} {n1} of {place} for {org}.",
        f"{person.split()[0]} had trained as a {job} and spent years on {topic}, especially the {n2}.",
        f"The work was later {verb2} by {other}, who compared it with a {adj2} {n3} from {place2} made around {year2}.",
        f"Local records say the {n1} drew visitors from {rng.choice(vocab.PLACES)} and "
        f"{rng.choice(vocab.PLACES)} every {rng.choice(['spring', 'summer', 'autumn', 'winter'])}.",
    ]
    rng.shuffle(sentences[2:])
    heading = f"{person}: {adj} {n1} in {place}"
    question = rng.choice([
        f"Who {verb} the {n1} of {place} in {year}?",
        f"What was {verb} by {person} for {org}?",
        f"Which {job} worked on the {adj} {n1} in {place}?",
    ])
    return SynthPassage(heading, " ".join(sentences)), question


def generate(n_passages: int, seed: int = 7) -> tuple[list[tuple[str, list[SynthPassage]]], list[tuple[str, int, str]]]:
    """Files of up to PER_FILE passages (name, passages) and one question per passage (file, ordinal, text)."""
    rng = random.Random(seed)
    files: list[tuple[str, list[SynthPassage]]] = []
    questions: list[tuple[str, int, str]] = []
    n_files = math.ceil(n_passages / PER_FILE)
    for f in range(n_files):
        count = min(PER_FILE, n_passages - f * PER_FILE)
        name = f"area-{f // 100:03d}/notes-{f:05d}.md"
        passages = []
        for i in range(count):
            passage, question = make_passage(rng)
            passages.append(passage)
            questions.append((name, i, question))
        files.append((name, passages))
    return files, questions


def file_text(title: str, passages: list[SynthPassage]) -> str:
    parts = [f"# {title}", ""]
    for p in passages:
        parts += [f"## {p.heading}", "", p.text, ""]
    return "\n".join(parts)


def write_corpus(notes_dir: Path, files: list[tuple[str, list[SynthPassage]]]) -> int:
    """Write the files that are missing or different; returns how many were written."""
    return sum(write_if_changed(notes_dir / name, file_text(f"Field notes {Path(name).stem}", passages).encode("utf-8"))
               for name, passages in files)


# -- results -----------------------------------------------------------------------
@dataclass
class Latency:
    name: str
    p50_ms: float
    p95_ms: float
    mean_ms: float
    queries: int
    cpu_p50_ms: float = 0.0  # process CPU time (all threads): what the call costs when the machine is busy


@dataclass
class RetrieverFigures:
    strategy: str
    with_embedding: Latency  # query embedding computed inside the timed call (cache cleared)
    without_embedding: Latency  # query vector memoised: retrieval alone
    source_hit_at_10: float  # share of queries whose source passage is in the top 10


@dataclass
class ScaleResult:
    passages: int
    files: int
    indexed_passages: int
    index_seconds: float
    passages_per_s: float
    index_cpu_seconds: float  # process CPU time of that build (all threads)
    passages_per_cpu_s: float  # throughput per CPU-second: comparable across busy and idle machines
    index_measured: str  # when the throughput figure was measured (a reused index keeps its figure)
    resync_seconds: float  # Index.sync() on the unchanged folder, in a fresh process
    resync_process_seconds: float  # that whole process, imports included
    resync_in_process_seconds: float
    query_embed: Latency
    retrievers: list[RetrieverFigures]
    knn_exact: Latency
    knn_fast: Latency
    knn_fast_recall_at_10: float
    knn_vec0_prefilter: Latency  # the all-vec0 alternative (bit KNN + rowid rescoring), for comparison
    knn_vec0_prefilter_recall_at_10: float
    knn_path: str  # which of the two `knn()` uses at this size
    db_bytes: int
    work_dir: str
    machine: MachineInfo
    created: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Timings:
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    def timed(self, fn: Callable[[], Any]) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        out = fn()
        self.wall_ms.append((time.perf_counter() - started) * 1000)
        self.cpu_ms.append((time.process_time() - cpu) * 1000)
        return out

    def latency(self, name: str) -> Latency:
        w = self.wall_ms
        return Latency(name, round(percentile(w, 50), 3), round(percentile(w, 95), 3),
                       round(sum(w) / max(len(w), 1), 3), len(w), round(percentile(self.cpu_ms, 50), 3))


# -- running -----------------------------------------------------------------------
_RESYNC_PROBE = """
import json, sys, time
t0 = time.perf_counter()
from localrag.api import Index
from localrag.config import load_settings
index = Index(load_settings(sys.argv[1], {"db": sys.argv[2]}))
report = index.sync()
index.close()
print(json.dumps({"sync_s": report.seconds, "changed": report.changed, "in_process_s": time.perf_counter() - t0}))
"""


def default_scale_dir(n_passages: int, seed: int) -> Path:
    return bench_cache_root() / f"scale-{n_passages}-seed{seed}"


def resync_in_fresh_process(notes_dir: Path, db_path: Path) -> tuple[float, float]:
    """(Index.sync() seconds, whole process seconds) for the unchanged folder, in a new interpreter."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _RESYNC_PROBE, str(notes_dir), str(db_path)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"the re-sync probe failed: {proc.stderr.strip()[-800:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(data["sync_s"]), wall


def _clear_query_cache(embedder: Any) -> None:
    # MiniLMEmbedder memoises query vectors per text; clearing makes the next call pay for embedding
    cache = getattr(embedder, "_query_cache", None)
    if cache is not None:
        cache.clear()


def _remove_index(db_path: Path, work_dir: Path) -> None:
    remove_db(db_path)
    (work_dir / INDEX_RUN_FILE).unlink(missing_ok=True)


@dataclass
class IndexFigures:
    seconds: float
    cpu_seconds: float
    passages: int
    measured: str

    @property
    def rate(self) -> float:
        return self.passages / self.seconds if self.seconds else 0.0

    @property
    def rate_per_cpu_s(self) -> float:
        return self.passages / self.cpu_seconds if self.cpu_seconds else 0.0


def _index_figures(work_dir: Path, added: int, seconds: float, cpu_seconds: float) -> IndexFigures:
    """The build that embedded the corpus: this run's, or the one recorded when the index was made."""
    record = work_dir / INDEX_RUN_FILE
    if added:
        when = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        record.write_text(json.dumps({"passages": added, "seconds": seconds, "cpu_seconds": cpu_seconds, "at": when,
                                      "load": [round(x, 2) for x in os.getloadavg()]}))
        return IndexFigures(seconds, cpu_seconds, added, when)
    if record.is_file():
        data = json.loads(record.read_text())
        return IndexFigures(float(data["seconds"]), float(data.get("cpu_seconds", 0.0)), int(data["passages"]),
                            f"{data['at']} (index reused)")
    return IndexFigures(0.0, 0.0, 0, "unknown: index reused without a record (run with --fresh)")


def _source_ids(index: Any, queries: list[tuple[str, int, str]],
                files: list[tuple[str, list[SynthPassage]]]) -> list[int | None]:
    """The passage id each query was written from (the passage holding its section heading)."""
    headings = {name: [p.heading for p in passages] for name, passages in files}
    by_file: dict[str, list] = {}
    out: list[int | None] = []
    for name, ordinal, _ in queries:
        if name not in by_file:
            by_file[name] = index.store.docs.passages_of(name)
        line = f"## {headings[name][ordinal]}"
        out.append(next((p.id for p in by_file[name] if line in p.text), None))
    return out


def run_scale(n_passages: int, n_queries: int = 200, work_dir: Path | None = None, *, seed: int = 7,
              fresh: bool = False, embedder: Any = None, k: int = 10,
              progress: Callable[[Progress], None] | None = None, log: Callable[[str], None] = lambda s: None,
              env: dict[str, str] | None = None) -> ScaleResult:
    if n_passages < 1 or n_queries < 1:
        raise ValueError("--passages and --queries must be at least 1")
    machine = machine_info()
    work = (work_dir or default_scale_dir(n_passages, seed)).expanduser().resolve()
    notes_dir, db_path = work / "notes", work / "index.db"
    if fresh:
        _remove_index(db_path, work)
    log(f"generating {n_passages:,} passages in {notes_dir}")
    files, questions = generate(n_passages, seed)
    if notes_dir.is_dir():  # a folder left by a run with another size
        wanted = {name for name, _ in files}
        for path in notes_dir.rglob("notes-*.md"):
            if path.relative_to(notes_dir).as_posix() not in wanted:
                path.unlink()
    write_corpus(notes_dir, files)
    settings = load_settings(notes_dir, {"db": str(db_path)}, env=env)
    index = Index(settings, embedder)
    try:
        log("indexing (embedding-bound)")
        cpu_started = time.process_time()
        first = index.sync(progress)
        built = _index_figures(work, first.passages_added, first.seconds, time.process_time() - cpu_started)
        status = index.status()
        log(f"indexed {status.passages:,} passages; re-syncing the unchanged folder")
        resync_in_process = index.sync().seconds
        resync_s, resync_wall = resync_in_fresh_process(notes_dir, db_path)
        result = _measure_queries(index, Assistant(index), questions, files, n_queries, seed, k, log)
        notes = []
        if status.passages != n_passages:
            notes.append(f"the chunker made {status.passages:,} passages of the {n_passages:,} generated")
        return ScaleResult(
            passages=n_passages, files=len(files), indexed_passages=status.passages,
            index_seconds=round(built.seconds, 2), passages_per_s=round(built.rate, 1),
            index_cpu_seconds=round(built.cpu_seconds, 2), passages_per_cpu_s=round(built.rate_per_cpu_s, 1),
            index_measured=built.measured,
            resync_seconds=round(resync_s, 3), resync_process_seconds=round(resync_wall, 3),
            resync_in_process_seconds=round(resync_in_process, 3), db_bytes=status.db_bytes, work_dir=str(work),
            knn_path="exact" if status.passages <= EXACT_LIMIT else "fast (binary prefilter + rescoring)",
            machine=machine, created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            notes=notes, **result,
        )
    finally:
        machine.load_after = [round(x, 2) for x in os.getloadavg()]
        index.close()


def _measure_queries(index: Any, assistant: Any, questions: list[tuple[str, int, str]],
                     files: list[tuple[str, list[SynthPassage]]], n_queries: int, seed: int, k: int,
                     log: Callable[[str], None]) -> dict[str, Any]:
    rng = random.Random(seed + 1)
    chosen = rng.sample(questions, min(n_queries, len(questions)))
    texts = [q for _, _, q in chosen]
    sources = _source_ids(index, chosen, files)
    embedder = index.embedder
    embedder.encode_one("warm-up query")  # model load is not a query cost
    embed = Timings()
    for text in texts:
        _clear_query_cache(embedder)
        embed.timed(lambda: embedder.encode_one(text))
    figures: list[RetrieverFigures] = []
    for name in RETRIEVERS:
        log(f"timing {name} over {len(texts)} queries")
        assistant.retrieve("warm-up query", name, k)
        cold, warm, hits = Timings(), Timings(), 0
        for text in texts:
            _clear_query_cache(embedder)
            cold.timed(lambda: assistant.retrieve(text, name, k))
        for text in texts:  # memoise every query vector, so the warm loop measures retrieval alone
            embedder.encode_one(text)
        for text, source in zip(texts, sources):
            retrieval = warm.timed(lambda: assistant.retrieve(text, name, k))
            hits += int(source is not None and source in {sp.passage.id for sp in retrieval.passages[:10]})
        figures.append(RetrieverFigures(name, cold.latency(f"{name} with query embedding"),
                                        warm.latency(f"{name} without query embedding"), round(hits / len(texts), 4)))
    log("timing store KNN: exact vs binary prefilter + rescoring")
    vectors = [embedder.encode_one(t) for t in texts]
    store_vectors = index.store.vectors
    store_vectors.knn_fast(vectors[0], k)  # loads the in-memory sign bits once
    exact_t, fast_t, vec0_t, overlap, vec0_overlap = Timings(), Timings(), Timings(), [], []
    for i, vec in enumerate(vectors):
        exact = exact_t.timed(lambda: store_vectors.knn_exact(vec, k))
        fast = fast_t.timed(lambda: store_vectors.knn_fast(vec, k))
        truth = {pid for pid, _ in exact}
        overlap.append(len(truth & {pid for pid, _ in fast}) / max(len(truth), 1))
        if i < VEC0_PREFILTER_QUERIES:
            slow = vec0_t.timed(lambda: store_vectors.knn_vec0_prefilter(vec, k))
            vec0_overlap.append(len(truth & {pid for pid, _ in slow}) / max(len(truth), 1))
    return {
        "query_embed": embed.latency("query embedding (MiniLM, one text)"),
        "retrievers": figures,
        "knn_exact": exact_t.latency(f"store knn_exact k={k}"),
        "knn_fast": fast_t.latency(f"store knn_fast k={k}"),
        "knn_fast_recall_at_10": round(sum(overlap) / len(overlap), 4),
        "knn_vec0_prefilter": vec0_t.latency(f"store knn_vec0_prefilter k={k} (all-vec0 variant, not used)"),
        "knn_vec0_prefilter_recall_at_10": round(sum(vec0_overlap) / max(len(vec0_overlap), 1), 4),
    }


def write_scale_result(result: ScaleResult, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_json(), indent=1) + "\n", encoding="utf-8")
    return path

