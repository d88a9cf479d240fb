"""tril_indices and triu_indices → iota arithmetic: the coordinates of the k-th
element of the triangle, in eager's row-major order, from closed forms.

Row, col and offset are compile-time ints. Each triangle is a run of rows of equal
length (col) and a trapezoid, whose row lengths grow (tril) or shrink (triu) by one
from row to row. In the trapezoid, the row of element k is the root of a quadratic,
taken in f64 (as ATen's CUDA kernels do) and then corrected by one row either way
with exact integer arithmetic, so no rounding can misplace an element.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.indexing import positions
from strata.passes.decompositions.rules import decomposes


class _Ints:
    """i64 arithmetic on tensors of one shape, with Python ints as constants."""

    def __init__(self, b: PrimBuilder, like: SSAValue):
        self.b, self.like = b, like

    def c(self, v: int | SSAValue) -> SSAValue:
        return v if isinstance(v, SSAValue) else self.b.constant_like(self.like, v)

    def ew(self, name: str, x, y) -> SSAValue:
        return self.b.ew(name, self.c(x), self.c(y))

    def add(self, x, y):
        return self.ew("add", x, y)

    def sub(self, x, y):
        return self.ew("sub", x, y)

    def mul(self, x, y):
        return self.ew("mul", x, y)

    def div(self, x, y):  # operands >= 0 here: truncation is floor
        return self.ew("div", x, y)

    def where(self, cond: SSAValue, x, y) -> SSAValue:
        return self.b.where(cond, self.c(x), self.c(y))


def _trapezoid_row(z: _Ints, k: SSAValue, first: int, step: int, rows: int) -> SSAValue:
    """The row i (0 <= i < rows) of element k of a trapezoid whose row i holds
    first + step*i elements (step = ±1): S(i) <= k < S(i + 1), where S(i) = i*first +
    step*i*(i - 1)/2 counts the elements above row i."""
    b = z.b

    def above(i: SSAValue) -> SSAValue:
        return z.add(z.mul(i, first), z.mul(z.div(z.mul(i, z.sub(i, 1)), 2), step))

    # S(i) = k is step*i^2 + a*i - 2k = 0 with a = 2*first - step; its root in [0, rows):
    # (sqrt(a^2 + 8k) - a) / 2 for growing rows, (a - sqrt(a^2 - 8k)) / 2 for shrinking.
    a = 2 * first - step
    kf = b.convert(k, "f64")
    disc = b.ew("add", b.ew("mul", kf, b.constant_like(kf, 8.0 * step)), b.constant_like(kf, float(a * a)))
    root = b.ew("sqrt", b.ew("maximum", disc, b.constant_like(kf, 0.0)))
    twice = b.ew("sub", root, b.constant_like(kf, float(a))) if step > 0 else b.ew("sub", b.constant_like(kf, float(a)), root)
    est = b.ew("mul", twice, b.constant_like(kf, 0.5))
    i = b.convert(b.ew("floor", est), "i64")
    i = b.ew("minimum", b.ew("maximum", i, z.c(0)), z.c(rows - 1))
    i = z.where(b.ew("gt", above(i), k), z.sub(i, 1), i)  # f64's rounding, undone
    nxt = z.add(i, 1)
    return z.where(b.ew("le", above(nxt), k), nxt, i)


def _indices(b: PrimBuilder, row: int, col: int, offset: int, upper: bool) -> tuple[SSAValue, SSAValue, int]:
    """(rows, cols, n): the i64 coordinates of the triangle's n elements."""
    if upper:
        # Full rows first (r + offset <= 0), then rows starting at column r + offset.
        full = max(0, min(row, 1 - offset))
        first = col - (full + offset) if full < row else 0
        trap = max(0, min(row - full, first))
        step = -1
    else:
        # Rows from max(0, -offset) hold r + offset + 1 elements up to col, then col.
        start = max(0, -offset)
        first = min(col, start + offset + 1)
        trap = max(0, min(row, col - 1 - offset) - start) if start < row else 0
        full = max(0, row - start - trap) if start < row else 0
        step = 1
    in_trap = trap * first + step * trap * (trap - 1) // 2
    n = in_trap + full * col
    if n == 0:
        return None, None, 0
    k = b.add(prim.IotaOp(n, 0, 1, "i64"))
    z = _Ints(b, k)
    if upper:
        # The full rows, then the trapezoid from row `full`, column full + offset.
        rect_r, rect_c = z.div(k, col), b.ew("remainder", k, z.c(col))
        kt = z.sub(k, full * col)
        if trap > 0:
            i = _trapezoid_row(z, b.ew("maximum", kt, z.c(0)), first, step, trap)
            done = z.add(z.mul(i, first), z.mul(z.div(z.mul(i, z.sub(i, 1)), 2), step))
            trap_r = z.add(i, full)
            trap_c = z.add(z.sub(kt, done), z.add(i, full + offset))
        else:
            trap_r = trap_c = rect_r
        in_rect = b.ew("lt", k, z.c(full * col))
        return z.where(in_rect, rect_r, trap_r), z.where(in_rect, rect_c, trap_c), n
    # The trapezoid from row `start`, column 0, then the full rows.
    kr = z.sub(k, in_trap)
    rect_r = z.add(z.div(b.ew("maximum", kr, z.c(0)), col), start + trap)
    rect_c = b.ew("remainder", b.ew("maximum", kr, z.c(0)), z.c(col))
    if trap > 0:
        i = _trapezoid_row(z, b.ew("minimum", k, z.c(in_trap - 1)), first, step, trap)
        done = z.add(z.mul(i, first), z.mul(z.div(z.mul(i, z.sub(i, 1)), 2), step))
        trap_r, trap_c = z.add(i, start), z.sub(k, done)
    else:
        trap_r = trap_c = rect_r
    in_trap_mask = b.ew("lt", k, z.c(in_trap))
    return z.where(in_trap_mask, trap_r, rect_r), z.where(in_trap_mask, trap_c, rect_c), n


@decomposes("aten::tril_indices", "aten::triu_indices")
def triangle_indices(op: AtenOp, b: PrimBuilder) -> SSAValue:
    row, col, offset = b.arg("row"), b.arg("col"), b.arg("offset") or 0
    if not all(type(v) is int for v in (row, col, offset)):
        raise Decline(f"triangle of symbolic size {row} x {col}, offset {offset}")
    layout = b.arg("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise Decline(f"layout {layout}")
    out = b.out()
    if row < 0 or col < 0:
        raise Decline("negative sizes are an error in eager")
    upper = op.overload_name == "aten::triu_indices"
    rows, cols, n = _indices(b, row, col, offset, upper) if row and col else (None, None, 0)
    if list(out.dims) != [2, n]:
        raise Decline(f"{n} elements where the op declares {list(out.dims)}")
    if n == 0:
        return b.full(out.dims, 0, out.dtype)
    which = positions(b, [2, n], 0)
    both = b.where(
        b.ew("eq", which, b.constant_like(which, 0)),
        b.broadcast(rows, [2, n]),
        b.broadcast(cols, [2, n]),
    )
    return b.convert(both, out.dtype)
