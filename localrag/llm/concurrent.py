"""N model calls in flight: what graph extraction uses with a served backend.

A served engine (vLLM, llama.cpp server with parallel slots) batches the requests it has
at the same time, so throughput grows with the number in flight. ``in_flight`` keeps
exactly up to ``concurrency`` calls outstanding, pulls items lazily (a persistent queue
can be read as it goes), and yields each result as it completes, so the caller writes
every passage in its own transaction in completion order and a crash loses at most the
calls in flight.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def in_flight(fn: Callable[[T], R], items: Iterable[T], concurrency: int, *,
              should_stop: Callable[[], bool] | None = None) -> Iterator[tuple[T, R | Exception]]:
    """Yield ``(item, fn(item))`` in completion order, or ``(item, exception)`` when ``fn`` raised.

    Never more than ``concurrency`` calls are outstanding and no item is taken from ``items``
    before a slot is free. Once ``should_stop()`` is true no new call starts; the calls already
    running finish and are yielded, then the iterator ends. Closing the iterator early waits
    for the running calls (each is bounded by the backend's timeout) and drops their results.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    stop = should_stop or (lambda: False)
    source = iter(items)
    exhausted = False
    pending: dict[Future, T] = {}
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="localrag-llm") as pool:
        while True:
            while not exhausted and len(pending) < concurrency and not stop():
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                pending[pool.submit(fn, item)] = item
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in [f for f in pending if f in done]:  # ties in submission order
                item = pending.pop(future)
                error = future.exception()
                if error is not None and not isinstance(error, Exception):
                    raise error  # KeyboardInterrupt, SystemExit: not a per-item failure
                yield item, (error if error is not None else future.result())
