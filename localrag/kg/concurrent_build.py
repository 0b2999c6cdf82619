"""The graph phase with N model calls in flight: GraphBuilder.run's driver for a served model.

A served engine batches the requests it has at the same time, so extraction keeps
``llm.concurrency`` calls outstanding (``localrag.llm.concurrent.in_flight``). Everything
that touches the index stays on the calling thread: reading the queue (lazily, as slots
free up), answering cache hits and rules-only passages (no call: written directly), and
writing each model result in its own transaction, which also dequeues the passage, in the
order the calls complete. The pool threads only run ``GraphBuilder.extract_with_model``.

A call that raised is handled as in the sequential loop (``GraphBuilder.call_failed``):
counted, the passage stays queued and is tried again later in the same run, and given up
after ``index.extract_max_attempts``. A stop request or an unreachable server ends the
taking of new passages; the calls already running finish and are written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from localrag.kg.extract import Extraction
from localrag.kg.run import BATCH, CALL_ERRORS, GraphRun
from localrag.llm.concurrent import in_flight
from localrag.records import Passage

if TYPE_CHECKING:
    from localrag.kg.builder import GraphBuilder  # only a type: the builder imports this module


def drain_in_flight(builder: "GraphBuilder", run: GraphRun, concurrency: int) -> None:
    """Drain the queue with up to ``concurrency`` model calls outstanding."""
    graph = builder.store.graph
    taken: set[int] = set()  # passages whose call is running (still queued until written)
    direct: list[tuple[Passage, Extraction]] = []  # extracted without a call, not yet written

    def stopping() -> bool:
        if run.outage is not None:
            return True
        if run.stop_requested():
            run.report.stopped = True
            return True
        return False

    def needing_calls() -> Iterator[Passage]:
        """Queued passages that need a model call, read as slots free up; the others are written here."""
        while not stopping():
            builder.write_all(direct, run)  # before reading the queue again: they leave it when written
            batch = [i for i in graph.queue.next_batch(BATCH + len(taken)) if i.passage not in taken]
            if not batch:
                return
            for item in batch:
                if stopping():
                    break
                found = builder.store.docs.passages([item.passage])
                if not found:
                    continue  # deleted since it was queued: the cascade removed its queue row
                p = found[0]
                ex = builder.extract_without_call(p)
                if ex is not None:
                    direct.append((p, ex))
                    continue
                builder.write_all(direct, run)
                taken.add(p.id)
                yield p

    while True:
        for p, result in in_flight(builder.extract_with_model, needing_calls(), concurrency, should_stop=stopping):
            taken.discard(p.id)
            if isinstance(result, CALL_ERRORS):
                ex = builder.call_failed(p, result, run)
            elif isinstance(result, Exception):
                raise result  # not an extraction failure: a bug; the passage stays queued
            else:
                ex = result
            if ex is not None:
                builder.write_all([(p, ex)], run)
        builder.write_all(direct, run)
        # a passage whose call raised (and is not given up yet) is still queued: another round
        # takes it again, as the sequential loop's next batch would; each round counts an attempt
        if stopping() or not graph.queue.next_batch(1):
            return
