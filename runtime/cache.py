"""The on-disk cache of generated kernels, keyed by their IR.

A key is the sha256 of the kernel's IR text, the back end, and the versions of the
tools that turn it into code, so a new torch, triton, llvmlite or strata never reads a
stale entry. Entries are written to a temporary name and renamed into place, so a
reader never sees half a file; an entry that fails to load is a miss, not a crash.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import llvmlite
import torch
import triton

import strata

CACHE_VERSION = "1"


def cache_dir() -> Path:
    """STRATA_CACHE_DIR, or ~/.cache/strata."""
    root = os.environ.get("STRATA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "strata"
    )
    return Path(root)


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in (CACHE_VERSION, strata.__version__, torch.__version__, triton.__version__, llvmlite.__version__, *parts):
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def read(kind: str, key: str, suffix: str) -> bytes | None:
    path = cache_dir() / kind / f"{key}{suffix}"
    try:
        return path.read_bytes()
    except OSError:
        return None


def write(kind: str, key: str, suffix: str, data: bytes) -> Path:
    folder = cache_dir() / kind
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}{suffix}"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path


def path_of(kind: str, key: str, suffix: str) -> Path:
    return cache_dir() / kind / f"{key}{suffix}"
