"""Crash safety: SIGKILL at random points of both indexing phases, restart, and get what an
uninterrupted run gets.

A harness process (this file run as a script) loads the embedder once, then forks one
child per run: each child opens the index and runs ``Index.sync`` (the embedding phase)
and ``Index.extract_graph`` (the extraction phase) as ``localrag index`` does, and is
killed with SIGKILL, either by itself when a seeded event counter reaches its kill point
(events are SQL statements through the store, embedder calls and model calls, so kills
land between statements of an open transaction), or by the harness after a seeded random
delay (so kills also land inside embedding, model calls and commits). The kill hooks live
in the child only; the product code is unchanged.

After every kill: PRAGMA integrity_check is ok and the store is consistent (no orphan
rows, vector and FTS rows match passages, no passage lost between the queue and the
graph). After the last kill a child runs to completion, and its rows must equal those of
an uninterrupted run on an identical copy of the folder. A second part does the same
with the real bundled model as extractor, comparing against a clean rebuild from the
same model replies (its extraction cache).

The default suite runs a short version (at least 20 kill points); `make soak` runs a
long one where every kill is followed by a restart that finishes the job.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from reliability_checks import check_store, diff, snapshot

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "notes"

FIRST = ["Alda", "Corvin", "Imre", "Petra", "Wendel", "Saskia", "Lorcan", "Mireille", "Teodor", "Brisa"]
LAST = ["Brenner", "Hale", "Vasko", "Ormond", "Quist", "Delacroix", "Fenwick", "Marsh", "Ilves", "Strand"]
PLACES = ["Tessmark", "Orlinsford", "Saltreach", "Kallendar", "Brannoch Vale", "Quillhaven", "Tolvenmark"]
THINGS = ["the Lanternfish survey", "the Cobblebell archive", "the Driftcount ledger", "the Seedwick garden"]


def generated_notes(n: int, seed: int) -> dict[str, str]:
    """Notes with names, places and links, long enough to give two or three passages each."""
    rng = random.Random(seed)
    notes: dict[str, str] = {}
    for i in range(n):
        who = f"{FIRST[i % 10]} {LAST[(i // 10 + i) % 10]}"
        friend = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        place, other = rng.sample(PLACES, 2)
        thing = rng.choice(THINGS)
        body = []
        for para in range(3):
            body.append(
                f"{who} met {friend} in {place} in {1890 + (i * 7 + para) % 60}. Together they worked on {thing}, "
                f"which {friend} had started after a winter in {other}. " * 3
                + f"See also [[gen-{(i + para + 1) % n:03d}]]."
            )
        notes[f"generated/gen-{i:03d}.md"] = f"# {who} {i}\n\n" + "\n\n## Later years\n\n".join(body) + "\n"
    return notes


SMALL_NOTES = {  # for the real-model part: each passage costs a model call
    "orlinsford.md": "# Orlinsford\n\nOrlinsford is a mill town on the river Velkra. Ilse Varnhagen runs its mill.\n",
    "ilse.md": "# Ilse Varnhagen\n\nIlse Varnhagen was born in Saltreach and moved to Orlinsford in 2019.\n",
    "saltreach.md": "# Saltreach\n\nSaltreach is a harbour town. The ferry to Quillhaven leaves from Saltreach.\n",
}


def make_folder(dst: Path, n_generated: int, seed: int, with_examples: bool = True) -> Path:
    if with_examples:
        shutil.copytree(EXAMPLES, dst, ignore=shutil.ignore_patterns(".localrag"))
    else:
        dst.mkdir(parents=True)
        for rel, text in SMALL_NOTES.items():
            (dst / rel).write_text(text)
    for rel, text in generated_notes(n_generated, seed).items():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_text(text)
    return dst


# -- the harness --------------------------------------------------------------------------------------------

@dataclass
class KillPoint:
    part: str  # "rules" | "model"
    round: int  # 1 = first indexing of the folder, 2 = after edits, renames, deletions and new notes
    phase: str  # "sync" (embedding phase) | "graph" (extraction phase)
    how: str  # "event": the child kills itself at its n-th event; "timer": the harness kills it after delay_s;
    #           "model": the child kills itself delay_s into its n-th model call
    n: int = 0
    delay_s: float = 0.0
    killed: bool = False
    problems: list[str] = field(default_factory=list)
    restart_diff: list[str] = field(default_factory=list)  # soak: a restart right after this kill, vs the reference


class _Events:
    """Counts events in the child and SIGKILLs the process at the chosen one."""

    def __init__(self, kill: KillPoint | None = None):
        self.kill = kill
        self.current = ""
        self.count = 0
        self.calls = 0

    def tick(self) -> None:
        k = self.kill
        if k is not None and self.current == k.phase:
            self.count += 1
            if k.how == "event" and self.count >= k.n:
                os.kill(os.getpid(), signal.SIGKILL)
        elif k is None and self.current:
            self.count += 1

    def model_call(self) -> None:
        k = self.kill
        self.calls += 1
        if k is not None and k.how == "model" and self.calls == k.n:
            import threading

            threading.Timer(k.delay_s, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()

    def install(self) -> None:
        from localrag.embed import MiniLMEmbedder
        from localrag.store.db import Store

        for cls, names in ((Store, ("execute", "executemany", "query", "one")), (MiniLMEmbedder, ("encode",))):
            for name in names:
                real = getattr(cls, name)

                def wrapped(self_, *args, _real=real, **kwargs):
                    self.tick()
                    return _real(self_, *args, **kwargs)

                setattr(cls, name, wrapped)
        from localrag.llm.llamacpp import LlamaCppLLM

        real_chat = LlamaCppLLM.chat

        def chat(self_, *args, **kwargs):
            self.model_call()
            return real_chat(self_, *args, **kwargs)

        LlamaCppLLM.chat = chat


def _job(folder: Path, overrides: dict, embedder, phases: tuple[str, ...], events: _Events) -> dict:
    """The indexing job of `localrag index` (the fast phase, then the graph phase); events and seconds per phase."""
    from localrag.api import Index
    from localrag.config import load_settings

    events.install()
    figures = {}
    index = Index(load_settings(folder, overrides, env={}), embedder)
    for phase in phases:
        events.current, events.count = phase, 0
        started = time.perf_counter()
        index.sync() if phase == "sync" else index.extract_graph()
        figures[phase] = (events.count, time.perf_counter() - started)
    events.current = ""
    started = time.perf_counter()
    index.sync()  # nothing left to do: what a restart costs before it reaches the graph phase
    figures["noop_sync"] = (0, time.perf_counter() - started)
    index.close()
    return figures


def _fork(folder: Path, overrides: dict, embedder, phases: tuple[str, ...], kill: KillPoint | None) -> tuple[bool, dict]:
    """Run the job in a forked child: (killed by SIGKILL?, the figures of a finished run)."""
    sys.stdout.flush()
    out = folder.parent / f"{folder.name}-figures.json"
    out.unlink(missing_ok=True)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            out.write_text(json.dumps(_job(folder, overrides, embedder, phases, _Events(kill))))
        except BaseException as exc:  # reported by the exit status
            print(f"child failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            code = 3
        os._exit(code)
    status = None
    if kill is not None and kill.how == "timer":
        deadline = time.monotonic() + kill.delay_s
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                break
            else:
                time.sleep(0.005)
    if status is None:
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL, f"child died of signal {os.WTERMSIG(status)}"
        return True, {}
    assert os.WEXITSTATUS(status) == 0, f"an indexing run failed with exit code {os.WEXITSTATUS(status)}"
    return False, json.loads(out.read_text())


def _remaining(db: Path, phase: str, reference: dict) -> float:
    """The share of the phase's work still to do, from what the killed runs committed."""
    if not db.exists():
        return 1.0
    from localrag.store.connection import connect

    conn = connect(db)
    try:
        done = {(p, sha) for p, sha in conn.execute("SELECT path, sha256 FROM documents")}
        if phase == "sync":
            wanted = {(d[0], d[1]) for d in reference["documents"]}  # (path, sha256)
            return len(wanted - done) / max(1, len(wanted))
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if "graph_queue" not in tables:
            return 1.0
        queued = conn.execute("SELECT COUNT(*) FROM graph_queue").fetchone()[0]
        return queued / max(1, len(reference["passages"]))
    finally:
        conn.close()


def _next_kill(rng: random.Random, part: str, rnd: int, phase: str, figures: dict, left: float, i: int) -> KillPoint:
    events, seconds = figures[phase]
    if part == "model":
        # the n-th model call still to make, killed a random moment into it (or into the write after it)
        calls = max(1, round(figures["calls"] * left))
        # at most 1 s in: a SmolLM2 call takes ~2 s here, and a kill that lands after the last call's
        # write finds the phase finished, leaving no second try (the graph phase got faster per batch)
        return KillPoint(part, rnd, phase, "model", n=rng.randint(1, calls), delay_s=round(rng.uniform(0.0, 1.0), 3))
    # early in what is left, so that several kills fit in one phase (each run keeps what it committed)
    if i % 2 == 0:
        return KillPoint(part, rnd, phase, "event", n=rng.randint(1, max(2, int(events * left / 3))))
    startup = figures["noop_sync"][1] if phase == "graph" else 0.0
    return KillPoint(part, rnd, phase, "timer", delay_s=round(startup + rng.uniform(0.0, max(0.05, seconds * left / 2)), 3))


def _kill_chain(killed: Path, reference: dict, figures: dict, cfg: dict, embedder, rng: random.Random,
                rnd: int, kills: dict[str, int]) -> list[KillPoint]:
    """Kill the job `kills[phase]` times per phase (as long as the phase has work left), checking after each."""
    done: list[KillPoint] = []
    db = killed / ".localrag" / "index.db"
    for phase in ("sync", "graph"):
        if phase == "graph" and cfg["part"] != "model":
            _fork(killed, cfg["overrides"], embedder, ("sync",), None)  # the fast phase ends before the graph phase
        attempts = 0
        while sum(k.killed for k in done if k.phase == phase) < kills.get(phase, 0) and attempts < 3 * kills[phase]:
            left = _remaining(db, phase, reference)
            if left == 0:
                break  # the phase finished: nothing left to interrupt
            kp = _next_kill(rng, cfg["part"], rnd, phase, figures, left, attempts)
            attempts += 1
            phases = ("sync",) if phase == "sync" else ("sync", "graph")
            kp.killed, _ = _fork(killed, cfg["overrides"], embedder, phases, kp)
            if kp.killed:
                kp.problems = check_store(db)
            if cfg["restart_each"] and kp.killed:
                # soak: this kill, then a restart that finishes the job and must match; then start over
                _fork(killed, cfg["overrides"], embedder, ("sync", "graph"), None)
                expected = reference
                if cfg["part"] == "model":
                    expected = snapshot(_replay_reference(killed.parent, killed, db, cfg["overrides"], embedder) / db.relative_to(killed))
                kp.restart_diff = diff(snapshot(db), expected) + check_store(db)
                _rewind(killed)
            done.append(kp)
    return done


def _rewind(killed: Path) -> None:
    """Soak: back to the index as it was when the round started (none in round 1)."""
    shutil.rmtree(killed / ".localrag")
    saved = killed.parent / f"{killed.name}-state"
    if saved.exists():
        shutil.copytree(saved, killed / ".localrag")


def _edit(folder: Path, seed: int) -> None:
    """Round 2: edits, a heading change, renames, deletions and new notes, the same in both copies."""
    rng = random.Random(seed)
    files = sorted(p for p in folder.rglob("*.md") if ".localrag" not in p.parts)
    picked = rng.sample(files, 10)
    for p in picked[:4]:
        p.write_text(p.read_text() + f"\n\nAdded later: Wendel Quist visited {rng.choice(PLACES)} in 1931.\n")
    text = picked[4].read_text()
    picked[4].write_text(text.replace("\n\n", "\n\nA new first paragraph about Saskia Fenwick.\n\n", 1))
    for p in picked[5:7]:
        p.rename(p.with_name("renamed-" + p.name))
    for p in picked[7:10]:
        p.unlink()
    for rel, body in generated_notes(3, seed + 1).items():
        (folder / rel.replace("gen-", "new-")).write_text(body.replace("gen-", "new-"))


def _same_mtimes(src: Path, dst: Path) -> None:
    for p in src.rglob("*"):
        if p.is_file() and ".localrag" not in p.parts:
            st = p.stat()
            os.utime(dst / p.relative_to(src), ns=(st.st_atime_ns, st.st_mtime_ns))


def run_part(work: Path, part: str, cfg: dict, embedder, rng: random.Random) -> dict:
    """Per round: an uninterrupted reference run, then kills on an identical copy, a finishing restart, a comparison."""
    started = time.perf_counter()
    cfg = cfg | {"part": part}
    overrides = cfg["overrides"]
    base = make_folder(work / f"{part}-pristine", cfg["generated"], cfg["seed"], cfg["examples"])
    ref, killed = work / f"{part}-reference", work / f"{part}-killed"
    shutil.copytree(base, ref)
    shutil.copytree(base, killed)
    db = Path(".localrag") / "index.db"
    rounds = []
    for rnd in (1, 2):
        if rnd == 2:
            if not cfg.get("round2"):
                break
            _edit(ref, cfg["seed"])
            _edit(killed, cfg["seed"])
            _same_mtimes(ref, killed)
            shutil.copytree(killed / ".localrag", work / f"{killed.name}-state")  # what a soak restart rewinds to
        if part == "model":
            figures = {"sync": (0, 0.0), "graph": (0, 0.0), "noop_sync": (0, 0.0), "calls": len(SMALL_NOTES)}
            _fork(ref, overrides | {"index.extractor": "rules"}, embedder, ("sync",), None)
            reference = snapshot(ref / db)
        else:
            _, figures = _fork(ref, overrides, embedder, ("sync", "graph"), None)
            reference = snapshot(ref / db)
        kills = {"sync": cfg["sync_kills"][rnd - 1], "graph": cfg["graph_kills"][rnd - 1]}
        plan = _kill_chain(killed, reference, figures, cfg, embedder, rng, rnd, kills)
        _fork(killed, overrides, embedder, ("sync", "graph"), None)  # the restart that finishes the job
        final = snapshot(killed / db)
        if part == "model":
            # a small model is not bit-for-bit repeatable, so the reference is a clean build from the
            # killed run's own model replies (its extraction cache): the same replies must give the same rows
            reference = snapshot(_replay_reference(work, killed, killed / db, overrides, embedder) / db)
        shutil.rmtree(work / f"{killed.name}-state", ignore_errors=True)
        rounds.append({
            "round": rnd, "figures": figures,
            "passages": len(reference["passages"]), "facts": len(reference["facts"]),
            "kills": [asdict(k) for k in plan],
            "final_problems": check_store(killed / db),
            "diff": diff(final, reference),
        })
    return {"part": part, "harness_seconds": round(time.perf_counter() - started, 1), "rounds": rounds}


def _replay_reference(work: Path, folder: Path, killed_db: Path, overrides: dict, embedder) -> Path:
    ref = work / "model-replayed"
    shutil.rmtree(ref, ignore_errors=True)
    shutil.copytree(folder, ref, ignore=shutil.ignore_patterns(".localrag"))
    pid = os.fork()
    if pid == 0:
        from localrag.api import Index
        from localrag.config import load_settings
        from localrag.store.repair import salvage_caches

        index = Index(load_settings(ref, overrides, env={}), embedder)
        salvage_caches(killed_db, index.store)
        index.sync()
        report = index.extract_graph()
        index.close()
        os._exit(0 if report.llm_calls == 0 else 4)
    _, status = os.waitpid(pid, 0)
    assert status == 0, "the replayed reference needed the model (the cache was incomplete)"
    return ref


def harness(config_path: str) -> None:
    cfg = json.loads(Path(config_path).read_text())
    import torch

    torch.set_num_threads(1)  # no thread pool in the harness: forking stays safe
    from localrag.embed import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.encode(["warm up"])
    rng = random.Random(cfg["seed"])
    work = Path(cfg["work"])
    results = [run_part(work, part, pcfg | {"seed": cfg["seed"], "restart_each": cfg["restart_each"]}, embedder, rng)
               for part, pcfg in cfg["parts"].items()]
    Path(cfg["out"]).write_text(json.dumps(results, indent=1, default=str))


# -- the tests ---------------------------------------------------------------------------------------------

RULES = {"index.extractor": "rules"}


def _model_overrides(model: Path) -> dict:
    return {"index.extractor": "llm", "llm.model": str(model), "llm.n_threads": 1,
            "index.extract_max_tokens": 96, "index.extract_max_triples": 2}


def _run_harness(tmp_path: Path, config: dict, timeout: int) -> list[dict]:
    work = tmp_path / "work"
    work.mkdir()
    config = config | {"work": str(work), "out": str(tmp_path / "result.json")}
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    r = subprocess.run([sys.executable, __file__, str(tmp_path / "config.json")], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=REPO)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads((tmp_path / "result.json").read_text())


def _assert_results(results: list[dict], min_kills: int) -> int:
    survived = 0
    for part in results:
        for rnd in part["rounds"]:
            killed = [k for k in rnd["kills"] if k["killed"]]
            for k in killed:
                where = f"{part['part']} round {k['round']} {k['phase']} kill ({k['how']} n={k['n']} delay={k['delay_s']})"
                assert k["problems"] == [], f"{where}: {k['problems']}"
                assert k["restart_diff"] == [], f"{where}, restarted: {k['restart_diff']}"
            assert rnd["final_problems"] == [], rnd["final_problems"]
            assert rnd["diff"] == [], f"{part['part']} round {rnd['round']}: restarted run differs from the uninterrupted one: {rnd['diff']}"
            assert rnd["passages"] > 0 and rnd["facts"] > 0
            survived += len(killed)
            print(f"{part['part']} round {rnd['round']}: {len(killed)} kill points survived of {len(rnd['kills'])} tried "
                  f"({sum(k['phase'] == 'sync' for k in killed)} in the embedding phase, "
                  f"{sum(k['phase'] == 'graph' for k in killed)} in the extraction phase; "
                  f"{sum(k['how'] == 'event' for k in killed)} at events, {sum(k['how'] != 'event' for k in killed)} timed); "
                  f"{rnd['passages']} passages, {rnd['facts']} facts; reference run {rnd['figures']}")
        print(f"{part['part']}: {part['harness_seconds']} s")
    assert survived >= min_kills, f"only {survived} kill points were hit"
    return survived


def test_sigkill_at_random_points_then_restart_matches_uninterrupted(tmp_path, bundled_model):
    config = {
        "seed": 20251129, "restart_each": False,
        "parts": {
            "rules": {"generated": 5, "examples": True, "round2": True, "overrides": RULES,
                      "sync_kills": [8, 4], "graph_kills": [10, 4]},
            "model": {"generated": 0, "examples": False, "overrides": _model_overrides(bundled_model),
                      "sync_kills": [0], "graph_kills": [3]},
        },
    }
    results = _run_harness(tmp_path, config, timeout=1500)
    survived = _assert_results(results, min_kills=20)
    by_phase = {(k["part"], k["phase"]) for p in results for r in p["rounds"] for k in r["kills"] if k["killed"]}
    assert {("rules", "sync"), ("rules", "graph"), ("model", "graph")} <= by_phase
    print(f"kill points survived: {survived}")


@pytest.mark.soak
@pytest.mark.timeout(6 * 3600)
def test_soak_every_kill_followed_by_a_finishing_restart(tmp_path, bundled_model):
    config = {
        "seed": 7, "restart_each": True,
        "parts": {
            "rules": {"generated": 20, "examples": True, "round2": True, "overrides": RULES,
                      "sync_kills": [30, 15], "graph_kills": [30, 15]},
            "model": {"generated": 0, "examples": False, "overrides": _model_overrides(bundled_model),
                      "sync_kills": [0], "graph_kills": [10]},
        },
    }
    results = _run_harness(tmp_path, config, timeout=6 * 3600)
    survived = _assert_results(results, min_kills=90)
    print(f"kill points survived: {survived}")


if __name__ == "__main__":
    harness(sys.argv[1])
