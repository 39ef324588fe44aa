"""dotjson's one on-disk cache: its root and its one way of writing into it.

Everything dotjson caches is a directory under :func:`cache_root`:

=================================  ==========================================================
``tokenizers/<name>``              tokenizer directories built from package files
                                   (:mod:`dotjson.tools.testing`) or read out of a GGUF file
``models/<gguf stem>-<key>``       a GGUF model converted (de-quantized) by ``transformers``,
                                   with its tokenizer: an ordinary model directory
=================================  ==========================================================

Each directory is written by :func:`atomic_dir`: built in a temporary directory beside its
target, stamped, then renamed into place, so a concurrent process (or one killed half-way) never
sees a half-written directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["cache_root", "atomic_dir", "is_built"]


def cache_root() -> Path:
    """The root of dotjson's cache: ``$DOTJSON_CACHE``, else ``$XDG_CACHE_HOME/dotjson``, else
    ``~/.cache/dotjson``."""
    base = os.environ.get("DOTJSON_CACHE")
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "dotjson"


def is_built(target: Path, stamp: str, version: str) -> bool:
    """Whether ``target`` is a finished directory of this ``version`` (its stamp file says so)."""
    p = Path(target) / stamp
    try:
        return p.is_file() and p.read_text().strip() == version
    except OSError:
        return False


def atomic_dir(target: Path, build: Callable[[Path], None], *, stamp: str = ".complete",
               version: str = "1") -> Path:
    """Return ``target``, first building it with ``build(tmpdir)`` unless a finished one is there.

    ``build`` writes into an empty temporary directory beside ``target``; the directory is then
    stamped (``stamp`` holds ``version``) and renamed into place. A stale directory (another
    version, or no stamp) is moved aside first so the rename is atomic. If another process
    installs the same version meanwhile, its directory is kept.

    Raises
    ------
    OSError
        If the cache cannot be written (the temporary directory is removed).
    Exception
        Whatever ``build`` raises (the temporary directory is removed).
    """
    target = Path(target)
    if is_built(target, stamp, version):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        os.chmod(tmp, 0o755)
        build(tmp)
        (tmp / stamp).write_text(version + "\n")
        if is_built(target, stamp, version):
            return target  # another process installed the same build meanwhile
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
            try:
                os.replace(target, old / "d")
            except OSError:
                pass
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not is_built(target, stamp, version):  # another process finished first: fine
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
