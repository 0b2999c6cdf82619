"""Give memory that native code freed back to the system.

glibc's allocator keeps the pages a thread freed inside that thread's arena. The embedding
thread's activations come in many sizes (each batch is padded to its longest text), so on a big
first index the arenas filled with free but unreturned pages: RSS grew by ~20 KB a passage until
the end. ``malloc_trim`` returns every arena's whole free pages; what it costs is those pages
faulted in again by the next group: on the whole tldr folder, 2,332 → 1,725 MB peak for 40.6 →
81.1 s of system CPU (docs/benchmarks.md "Scale: the whole tldr-pages folder").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache
from typing import Callable


@lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl and other C libraries without it
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the C heap's free pages to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
