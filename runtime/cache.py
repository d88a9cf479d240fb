"""The on-disk cache of generated kernels, keyed by their IR.

A key is the sha256 of the kernel's IR text, the back end, and the versions of the
tools that turn it into code, so a new torch, triton, llvmlite or strata never reads a
stale entry. Entries are written to a temporary name and renamed into place, so a
reader never sees half a file; an entry that fails to load is a miss, not a crash.
Reads and writes are logged under `strata.cache` at DEBUG (STRATA_LOGS=+cache); the
compiler logs each kernel's hit or miss at INFO, telling them apart by `writes`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import functools
from importlib import metadata

import llvmlite
import torch

import strata

CACHE_VERSION = "1"

log = logging.getLogger("strata.cache")

# Entries this process has written (or tried to): a compile that wrote none was a hit.
writes = 0


def cache_dir() -> Path:
    """STRATA_CACHE_DIR, or ~/.cache/strata."""
    root = os.environ.get("STRATA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "strata"
    )
    return Path(root)


@functools.cache
def _triton_version() -> str:
    """Triton's version, read from its package metadata: importing triton itself takes
    a sixth of a second, which a CPU compile would pay for nothing."""
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return "none"


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in (CACHE_VERSION, strata.__version__, torch.__version__, _triton_version(), llvmlite.__version__, *parts):
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def settings_key(options: dict, ignored: tuple[str, ...] = ()) -> str:
    """The options as a cache key part: all but tracing's and those named (the caches'
    own switches, where they do not change what is stored)."""
    return json.dumps({k: repr(v) for k, v in sorted(options.items()) if not k.startswith("trace.") and k not in ignored})


def global_state_key() -> str:
    """The global state a trace depends on: grad mode, default dtype, deterministic
    algorithms, autocast on the CPU and CUDA."""
    return repr((
        torch.is_grad_enabled(),
        str(torch.get_default_dtype()),
        torch.are_deterministic_algorithms_enabled(),
        *[(torch.is_autocast_enabled(d), str(torch.get_autocast_dtype(d))) for d in ("cpu", "cuda")],
    ))


def read(kind: str, key: str, suffix: str) -> bytes | None:
    path = cache_dir() / kind / f"{key}{suffix}"
    try:
        data = path.read_bytes()
    except OSError:
        log.debug("miss: %s", path)
        return None
    log.debug("hit: %s", path)
    return data


def write(kind: str, key: str, suffix: str, data: bytes) -> Path:
    global writes
    writes += 1
    folder = cache_dir() / kind
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}{suffix}"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    log.debug("stored %d bytes: %s", len(data), path)
    return path


def store(kind: str, key: str, suffix: str, data: bytes) -> bool:
    """write(), where the entry is only an optimization: an unwritable cache directory
    costs the next compile time, never this one an error. Returns whether it was written."""
    try:
        write(kind, key, suffix, data)
    except OSError as e:
        log.debug("not stored (%s): %s/%s%s", e, kind, key, suffix)
        return False
    return True


def path_of(kind: str, key: str, suffix: str) -> Path:
    return cache_dir() / kind / f"{key}{suffix}"
