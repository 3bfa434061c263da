"""A long run's memory: the C allocator asked to give back what a finished stage freed.

A random run holds one round's cases at a time (parity/random_cases.py), drops them, draws the next.
Python's own allocator returns its 1 MiB arenas once they are empty; the C allocator below it
(glibc's malloc, which holds every object over 512 bytes: lists of a round's cases, the bytes read
from the workers' pipes, report text) does not give freed memory back by itself in two cases that a
long run hits every round:

* glibc raises its mmap threshold to the size of each mmapped block freed (up to 32 MiB), so after
  the first round's large buffers, the next rounds' come from the heap instead, and a heap keeps
  its freed chunks resident wherever a live chunk sits above them;
* memory freed in the middle of a heap (not at its top) stays resident until ``malloc_trim``.

So the process peaked a little higher each round than the one before (measured in
docs/measurements/2026-12-07-flat-memory-all-rules.md). :func:`hold_thresholds` keeps glibc's
initial thresholds (128 KiB) fixed for the process, and :func:`give_back` returns the free pages of
every heap after each stage. Elsewhere (another C library, no ``mallopt``) both do nothing.

Python's arenas are beyond their reach: one live object keeps its arena. That is why a parity run of
more than one round runs each in a forked copy (:mod:`.forked`); these two still act within the
copy, between its groups, and in a run of one round.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

# glibc's mallopt parameters (malloc.h); setting either also turns its dynamic adjustment off
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc's own initial value of both: what it uses until the first large block is freed
_THRESHOLD = 128 * 1024


def _libc() -> Any:
    """The C library, if it is glibc (it alone has both calls); None elsewhere."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not (hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim")):
        return None
    lib.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    lib.malloc_trim.argtypes = (ctypes.c_size_t,)
    return lib


_LIBC = _libc()


def hold_thresholds() -> bool:
    """Keep glibc's mmap and trim thresholds at their initial 128 KiB for the rest of the process, so
    that every large block is mmapped and unmapped when freed. True if the allocator took it."""
    if _LIBC is None:
        return False
    return bool(_LIBC.mallopt(_M_MMAP_THRESHOLD, _THRESHOLD)) and bool(_LIBC.mallopt(_M_TRIM_THRESHOLD, _THRESHOLD))


def give_back() -> bool:
    """Return the free pages of every heap to the system (``malloc_trim(0)``). True if any were."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))
