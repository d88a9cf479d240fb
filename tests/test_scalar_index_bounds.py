"""A select at an int over unbacked symbols (`x[v]` for v = t.sum().item()), which
torch leaves unchecked, raises eager's IndexError where v is out of range, before any
read: prim.check_scalar_index (dialects/prim_data_dependent.py), placed by
passes/decompositions/shape.py, checks it on the host and binds the start of the
slice. A proved index, or one over backed symbols (torch's guards check it), has no
check; with `index_bounds_checks=False` an index out of range reads the nearest
element. On the CPU (LLVM) and through Triton's interpreter."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

import strata  # noqa: F401  (the "strata" backend)
from strata.dialects.prim_indexing import IndexOutOfBounds

CODEGENS = ["llvm", "triton"]


@pytest.fixture(autouse=True)
def capture_scalars():
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        yield


@pytest.fixture(params=CODEGENS)
def codegen(request, monkeypatch):
    if request.param == "triton":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    return request.param


def compiled(fn, codegen: str = "llvm", **options):
    """fn compiled once (dynamic), any eager fallback or interpreted kernel an error."""
    torch._dynamo.reset()
    c = torch.compile(fn, backend="strata", dynamic=True, options={"codegen": codegen, **options})

    def call(*args):
        with warnings.catch_warnings():
            for words in ("no lowering covers", "runs eagerly", "kernel interpreter"):
                warnings.filterwarnings("error", message=f".*{words}.*")
            return c(*args)

    return call


def item_of(v: int) -> torch.Tensor:
    """An input whose sum is v: the index item() reads."""
    return torch.tensor([v, 0])


A12 = torch.arange(12.0)
GRID = torch.arange(12.0).reshape(3, 4)

# name: (fn of an int tensor, in-range sums, (out-of-range sum, eager's words))
CASES = {
    "either_sign": (lambda t: A12[t.sum().item()] * 2, (0, 5, -1, -12, 11), (-14, "index -14 is out of bounds for dimension 0 with size 12")),
    "min": (lambda t: A12[min(t.sum().item(), -1)] * 2, (3, -1, -12), (-13, "index -13 is out of bounds for dimension 0 with size 12")),
    "abs": (lambda t: A12[abs(t.sum().item())] + 1, (0, -11, 11), (12, "index 12 is out of bounds for dimension 0 with size 12")),
    "dim_1": (lambda t: GRID.select(1, min(t.sum().item(), 3)) * 2, (3, 0, -4), (-5, "index -5 is out of bounds for dimension 1 with size 4")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_item_index_out_of_range_raises_as_in_eager(name, codegen):
    fn, good, (bad, words) = CASES[name]
    call = compiled(fn, codegen)
    for v in good:
        torch.testing.assert_close(call(item_of(v)), fn(item_of(v)), rtol=0, atol=0)
    with pytest.raises(IndexError):
        fn(item_of(bad))
    with pytest.raises(IndexOutOfBounds, match=words):
        call(item_of(bad))
    torch.testing.assert_close(call(item_of(good[0])), fn(item_of(good[0])), rtol=0, atol=0)  # and runs on


def test_the_check_comes_before_a_fused_read(codegen):
    # the fuzzer's program 201: the select fuses into the gather's kernel, which read
    # far outside its input at index -2*7
    def fn(x, t, i):
        return x.roll(1)[min(2 * t.sum().item(), -1)].gather(-1, i)

    x, i = torch.arange(12).reshape(2, 2, 3), torch.zeros(2, 2, dtype=torch.long)
    call = compiled(fn, codegen)
    torch.testing.assert_close(call(x, item_of(-1), i), fn(x, item_of(-1), i))
    with pytest.raises(IndexOutOfBounds, match="index -14 is out of bounds for dimension 0 with size 2"):
        call(x, item_of(-7), i)


def test_a_symbolic_size(codegen):
    fn = lambda x, t: x[min(t.sum().item(), -1)] * 2  # noqa: E731
    call = compiled(fn, codegen)
    for n, v in ((5, -5), (7, -1), (9, -9)):
        x = torch.arange(float(n))
        torch.testing.assert_close(call(x, item_of(v)), fn(x, item_of(v)))
    with pytest.raises(IndexOutOfBounds, match="index -8 is out of bounds for dimension 0 with size 7"):
        call(torch.arange(7.0), item_of(-8))


def test_a_complex_tensor():
    z = torch.complex(torch.arange(6.0), -torch.arange(6.0))
    fn = lambda t: z[abs(t.sum().item())] * 2  # noqa: E731
    call = compiled(fn)
    torch.testing.assert_close(call(item_of(-4)), fn(item_of(-4)))
    with pytest.raises(IndexOutOfBounds, match="index 6 is out of bounds for dimension 0 with size 6"):
        call(item_of(6))


def prim_ir(fn, *args, **options) -> str:
    folder = Path(options.pop("folder"))
    compiled(fn, **options, **{"trace.enabled": True, "trace.dir": str(folder)})(*args)
    return "\n".join(p.read_text() for p in sorted(folder.rglob("1_prim.mlir")))


def test_only_an_index_proved_in_range_has_no_check(tmp_path):
    clamped = lambda t: torch.arange(12.0)[min(max(t.sum().item(), 0), 11)] * 2  # noqa: E731
    assert "check_scalar_index" not in prim_ir(clamped, item_of(4), folder=tmp_path / "proved")
    # An int argument: torch 2.13's Dynamo guards its range, 2.11's does not.
    backed = lambda x, k: x[k] * 2  # noqa: E731
    assert "check_scalar_index" in prim_ir(backed, A12, 3, folder=tmp_path / "backed")
    assert "check_scalar_index" in prim_ir(CASES["min"][0], item_of(4), folder=tmp_path / "unproved")


def test_without_checks_an_index_reads_the_nearest_element(codegen):
    fn = lambda t: A12[t.sum().item()] * 2  # noqa: E731
    call = compiled(fn, codegen, index_bounds_checks=False)
    assert call(item_of(-3)).item() == 18.0
    assert call(item_of(-100)).item() == 0.0
    assert call(item_of(100)).item() == 22.0


def test_an_empty_dim_raises_even_without_checks():
    fn = lambda x, t: x[t.sum().item()] + 1  # noqa: E731
    x = torch.ones(0, 3)
    with pytest.raises(IndexError):
        fn(x, item_of(0))
    for checks in (True, False):
        with pytest.raises(IndexOutOfBounds, match="index 0 is out of bounds for dimension 0 with size 0"):
            compiled(fn, index_bounds_checks=checks)(x, item_of(0))


def test_select_scatter_at_an_index_out_of_range_raises_as_eager():
    """torch's decomposition (where(arange == index, src, x)) matches nothing at an index
    out of range and raises nothing: strata keeps select_scatter whole and checks it."""
    fn = lambda x, t: x.select_scatter(torch.ones(3), 1, abs(t.sum().item())) * 2  # noqa: E731
    x = torch.zeros(3, 4)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        c = torch.compile(fn, backend="strata")
        torch.testing.assert_close(c(x, item_of(2)), fn(x, item_of(2)))
        with pytest.raises(IndexError):
            fn(x, item_of(-14))
        with pytest.raises(IndexError):
            c(x, item_of(-14))
