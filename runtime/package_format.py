"""The file an ahead-of-time package is: a zip a user can open and read.

    manifest.json     what the package is: format, versions, target, inputs and their
                      ranges, outputs, weights, kernels, and the sha256 of every other file
    manifest.sha256   the sha256 of manifest.json
    program.json      the kernel program as steps (runtime/package_runner.py runs them)
    kernels/…         machine code: LLVM object code for the CPU, cubins for a GPU
    weights/…         each parameter, buffer and constant as raw little-endian bytes
                      (dtype, shape and strides in the manifest), stored uncompressed

Nothing in it is a pickle. Loading a package runs, of what it holds, only its kernels'
machine code, the integer size expressions of program.json, and (on a GPU) the Triton
launchers' size and grid arithmetic, checked against a small grammar
(runtime/package_triton.py): none of it can do more than compute sizes and launch the
package's own kernels. Every file is checked against its digest before use, so a
truncated or altered package fails to load with the name of the file that differs,
never runs.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

FORMAT = 1
MANIFEST, MANIFEST_DIGEST, PROGRAM = "manifest.json", "manifest.sha256", "program.json"


class PackagingError(ValueError):
    """A program strata cannot package, with the reason (at compile_and_package)."""


class PackageError(RuntimeError):
    """A package that cannot be loaded or run here: damaged, built for another target
    or torch, or called with inputs outside its specs."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(path: str | os.PathLike, manifest: dict[str, Any], program: dict[str, Any], files: dict[str, bytes]) -> Path:
    """Writes the package atomically (a temporary file renamed into place)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(serialize(manifest, program, files))
    os.replace(tmp, path)
    return path


def serialize(manifest: dict[str, Any], program: dict[str, Any], files: dict[str, bytes]) -> bytes:
    """The package's bytes: the zip, with the digests of its files in the manifest."""
    program_bytes = json.dumps(program, indent=1).encode()
    manifest = {**manifest, "format": FORMAT,
                "files": {name: digest(data) for name, data in [(PROGRAM, program_bytes), *files.items()]}}
    manifest_bytes = json.dumps(manifest, indent=1).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(_entry(MANIFEST), manifest_bytes, zipfile.ZIP_DEFLATED)
        z.writestr(_entry(MANIFEST_DIGEST), digest(manifest_bytes), zipfile.ZIP_STORED)
        z.writestr(_entry(PROGRAM), program_bytes, zipfile.ZIP_DEFLATED)
        for name, data in files.items():
            # weights uncompressed: they are read as they are, and rarely compress
            z.writestr(_entry(name), data, zipfile.ZIP_STORED if name.startswith("weights/") else zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _entry(name: str) -> zipfile.ZipInfo:
    """A zip entry dated 2000-01-01: when a package was written is in its manifest."""
    return zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))


class Package:
    """An opened package: its manifest and program, read and checked; other files are
    read (and checked) when asked for."""

    def __init__(self, path: str | os.PathLike | bytes):
        self.path = path
        try:
            self._zip = zipfile.ZipFile(path if not isinstance(path, bytes) else _bytes_io(path))
            manifest_bytes = self._zip.read(MANIFEST)
            wanted = self._zip.read(MANIFEST_DIGEST).decode("ascii", errors="replace").strip()
        except (zipfile.BadZipFile, KeyError, OSError, EOFError) as e:
            raise PackageError(f"{_name(path)} is not a strata package, or it is damaged ({type(e).__name__}: {e})") from None
        if digest(manifest_bytes) != wanted:
            raise PackageError(f"{_name(path)}: {MANIFEST} does not match its digest: the package was altered or damaged")
        self.manifest = json.loads(manifest_bytes)
        if self.manifest.get("format") != FORMAT:
            raise PackageError(f"{_name(path)} has package format {self.manifest.get('format')!r}; "
                               f"this strata reads format {FORMAT}")
        self.program = json.loads(self.read(PROGRAM))

    def read(self, name: str) -> bytes:
        """The file's bytes, checked against the manifest's digest."""
        wanted = self.manifest["files"].get(name)
        if wanted is None:
            raise PackageError(f"{_name(self.path)}: the manifest lists no file {name!r}")
        try:
            data = self._zip.read(name)
        except (KeyError, zipfile.BadZipFile, OSError, EOFError) as e:
            raise PackageError(f"{_name(self.path)}: cannot read {name} ({type(e).__name__}: {e}): the package is damaged") from None
        if digest(data) != wanted:
            raise PackageError(f"{_name(self.path)}: {name} does not match its digest: the package was altered or damaged")
        return data


def _bytes_io(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def _name(path: Any) -> str:
    return "the package" if isinstance(path, bytes) else str(path)
