"""A helper process of :func:`dotjson._kernels.jit.prelink` on a cold Numba cache.

``python -m dotjson._kernels.compile_worker MODULE:UNIT ...`` compiles the named units, in
order, into Numba's cache (the directory of the parent, ``NUMBA_CACHE_DIR``) and exits; the
parent loads them from there (or compiles a unit itself when it needs one the helper has not
reached: the helper skips a unit the cache holds by then). It compiles nothing else and runs no
kernel.
"""

from __future__ import annotations

import sys

from dotjson._kernels.jit import _worker

if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
