"""The reference interpreter of the kernel dialect.

It walks a `kernel.func`'s iteration domain all at once with torch (see
runtime/interpreters/kernel.py, on xDSL's interpreter framework). It is the meaning
against which both code generators are tested, and the runtime's way to run a kernel
that a code generator cannot compile.
"""

from __future__ import annotations

from strata.runtime.interpreters import run_kernel, run_program
from strata.runtime.interpreters.kernel import flat_storage

__all__ = ["flat_storage", "run_kernel", "run_program"]
