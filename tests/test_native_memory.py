"""release_freed_memory gives a thread's freed C heap pages back (the first index's RSS growth)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from pathlib import Path

import pytest

from localrag.native_memory import release_freed_memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")

BLOCK = 2048  # below glibc's mmap threshold: served from the thread's arena, as torch's small buffers are
BLOCKS = 40_000  # ~80 MB
KEPT_EVERY = 64  # one block in 64 stays allocated, so the arena's top cannot simply shrink


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def _fragment_an_arena(libc: ctypes.CDLL, kept: list[int]) -> None:
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for ptr in blocks:
        ctypes.memset(ptr, 1, BLOCK)  # touched: resident
    for at, ptr in enumerate(blocks):
        if at % KEPT_EVERY:
            libc.free(ptr)
        else:
            kept.append(ptr)


def test_freed_pages_of_another_threads_arena_go_back():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    kept: list[int] = []
    worker = threading.Thread(target=_fragment_an_arena, args=(libc, kept))
    worker.start()
    worker.join()
    before = _rss_kb()
    try:
        assert release_freed_memory()
        after = _rss_kb()
    finally:
        for ptr in kept:
            libc.free(ptr)
    freed_kb = BLOCKS * BLOCK // 1024 * (KEPT_EVERY - 1) // KEPT_EVERY
    assert before - after > freed_kb // 2, (before, after)
