"""N model calls in flight: what graph extraction uses with a served backend.

A served engine (vLLM, llama.cpp server with parallel slots) batches the requests it has
at the same time, so throughput grows with the number in flight. ``in_flight`` keeps
exactly up to ``concurrency`` calls outstanding, pulls items lazily (a persistent queue
can be read as it goes), and yields each result as it completes, so the caller writes
every passage in its own transaction in completion order and a crash loses at most the
calls in flight.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from queue import SimpleQueue
from typing import Callable, Iterable, Iterator, TypeVar

from localrag.llm.openai_compat import OpenAICompatLLM
from localrag.llm.served_http import TransportError

T = TypeVar("T")
R = TypeVar("R")


def in_flight(fn: Callable[[T], R], items: Iterable[T], concurrency: int, *,
              should_stop: Callable[[], bool] | None = None) -> Iterator[tuple[T, R | Exception]]:
    """Yield ``(item, fn(item))`` in completion order, or ``(item, exception)`` when ``fn`` raised.

    Never more than ``concurrency`` calls are outstanding and no item is taken from ``items``
    before a slot is free. ``items`` is read, and every result is yielded, on the calling
    thread; only ``fn`` runs on the pool's threads. Once ``should_stop()`` is true no new call
    starts; the calls already running finish and are yielded, then the iterator ends. Closing
    the iterator early waits for the running calls (each is bounded by the backend's timeout)
    and drops their results.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    stop = should_stop or (lambda: False)
    source = iter(items)
    exhausted = False
    pending: dict[Future, T] = {}
    finished: SimpleQueue[Future] = SimpleQueue()  # filled by the pool threads as each call ends
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="localrag-llm") as pool:
        while True:
            while not exhausted and len(pending) < concurrency and not stop():
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                future = pool.submit(fn, item)
                pending[future] = item
                future.add_done_callback(finished.put)
            if not pending:
                return
            future = finished.get()
            item = pending.pop(future)
            error = future.exception()
            if error is not None and not isinstance(error, Exception):
                raise error  # KeyboardInterrupt, SystemExit: not a per-item failure
            yield item, (error if error is not None else future.result())


def accepts_parallel_calls(llm: object) -> bool:
    """Whether a backend may be called from several threads at once.

    A served backend makes one HTTP request per call and its server does the scheduling, so
    it may; llama.cpp in process holds one model context, which is not thread-safe, so it
    may not. A backend says so with a ``parallel_calls`` attribute; the OpenAI-compatible
    backend is served by definition. A ``RecordingLLM`` is judged by the backend it wraps.
    """
    inner = getattr(llm, "inner", llm)
    flag = getattr(inner, "parallel_calls", None)
    if flag is not None:
        return bool(flag)
    return isinstance(inner, OpenAICompatLLM)


# kinds of served_http.TransportError that mean no server answers at all (a read timeout is a
# slow reply to one request: it counts against that passage only)
UNREACHABLE = frozenset({"refused", "dns", "connect-timeout", "tls", "broken", "other"})


def server_unreachable(exc: BaseException) -> bool:
    """The model server cannot be reached (after the backend's own retries): every further call
    would fail the same way, so a run should stop rather than charge it to each passage."""
    return isinstance(exc, TransportError) and exc.kind in UNREACHABLE
