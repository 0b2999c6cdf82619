"""kill -9 in the middle of the graph phase, restart: the same graph as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kg_helpers import assert_healthy, snapshot, write_notes

pytest_plugins = ["conftest_kg"]

FIRST = ["Ada", "Mary", "Charles", "Luigi", "Grace", "Alan", "Emmy", "Kurt", "Sofia", "Henri"]
LAST = ["Lovelace", "Somerville", "Babbage", "Menabrea", "Hopper", "Turing", "Noether", "Godel", "Kovalevskaya", "Poincare"]
CITIES = ["London", "Paris", "Turin", "Vienna", "Berlin", "Zurich", "Stockholm"]

RUNNER = """
import sys
from localrag.api import Index
from localrag.config import load_settings
index = Index(load_settings(sys.argv[1], {"index.extractor": "rules"}, env={}))
index.extract_graph(progress=lambda p: print(p.done, p.total, flush=True))
print("finished", flush=True)
"""


def many_notes(n: int) -> dict[str, str]:
    notes = {}
    for i in range(n):
        name = f"{FIRST[i % 10]} {LAST[(i // 10) % 10]}"
        friend = f"{FIRST[(i + 3) % 10]} {LAST[(i // 10 + 1) % 10]}"
        notes[f"note-{i:03d}.md"] = (
            f"# {name} {i}\n\n{name} was born in {CITIES[i % 7]} in {1800 + i}. "
            f"She corresponded with {friend} about the Analytical Engine.\n\n"
            f"Later {name} moved to {CITIES[(i + 2) % 7]} and joined the Royal Society in {1830 + i}.\n"
        )
    return notes


def test_kill_9_mid_queue_then_resume_gives_the_uninterrupted_graph(kg_index, tmp_path):
    notes = many_notes(40)
    folder = write_notes(tmp_path / "killed", notes)
    index = kg_index(folder)
    index.sync()
    total = index.store.graph.queue.length()
    assert total == index.store.docs.passage_count() >= 40
    index.close()

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LOCALRAG_INDEX_EXTRACTOR": "rules"}
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
    done = 0
    deadline = time.monotonic() + 600
    try:
        for line in proc.stdout:
            if line.strip() == "finished":
                break
            done = int(line.split()[0])
            if done >= 3:
                os.kill(proc.pid, signal.SIGKILL)
                break
            assert time.monotonic() < deadline, "the graph phase made no progress"
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert 3 <= done < total, f"expected a kill mid-queue (done {done} of {total}): {proc.stderr.read()[-2000:]}"
    assert proc.returncode == -signal.SIGKILL

    resumed = kg_index(folder)
    left = resumed.store.graph.queue.length()
    assert 0 < left <= total - done  # every written passage left the queue with its facts
    assert_healthy(resumed)
    report = resumed.extract_graph()
    assert report.remaining == 0 and report.passages == left

    reference = kg_index(write_notes(tmp_path / "uninterrupted", notes))
    reference.sync()
    reference.extract_graph()
    assert snapshot(resumed) == snapshot(reference)
    assert resumed.status().extra == reference.status().extra
    assert_healthy(resumed)
