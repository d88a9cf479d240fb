"""An index out of range raises IndexError, as in eager, through both code generators
(LLVM on the CPU; Triton in its interpreter, on CPU tensors): prim.check_index, checked
in the kernel (codegen/llvm_bounds.py, codegen/triton_bounds.py). In-range indices,
negative ones included, give eager's values; simplify drops a check that cannot fail;
`index_bounds_checks=False` leaves no check in the kernels."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import strata  # noqa: F401  (the "strata" backend)
from strata.dialects.prim_indexing import IndexOutOfBounds

CODEGENS = ["llvm", "triton"]

REPRODUCERS = {
    "index": (lambda x, i: x[i] * 2, lambda: (torch.arange(10.0), torch.tensor([1, 100000000]))),
    "index_negative": (lambda x, i: x[i] * 2, lambda: (torch.arange(10.0), torch.tensor([1, -11]))),
    "gather": (lambda x, i: torch.gather(x, 0, i) * 2, lambda: (torch.arange(10.0), torch.tensor([1, 10]))),
    "index_select": (lambda x, i: torch.index_select(x, 0, i) * 2, lambda: (torch.arange(10.0), torch.tensor([1, 10]))),
    "embedding": (lambda w, i: torch.nn.functional.embedding(i, w) * 2, lambda: (torch.randn(10, 3), torch.tensor([1, 10]))),
    "take": (lambda x, i: torch.take(x, i) * 2, lambda: (torch.arange(10.0).reshape(2, 5), torch.tensor([1, 10]))),
}

# What each reproducer's error says where the LLVM kernel reports the index itself.
LLVM_MESSAGES = {
    "index": "index 100000000 is out of bounds for dimension 0 with size 10",
    "index_negative": "index -11 is out of bounds for dimension 0 with size 10",
    "gather": "index 10 is out of bounds for dimension 0 with size 10",
    "index_select": "index 10 is out of bounds for dimension 0 with size 10",
    "embedding": "index 10 is out of bounds for dimension 0 with size 10",
    "take": "index 10 is out of bounds for dimension 0 with size 10",
}


def compiled(fn, codegen: str, **options):
    return torch.compile(fn, backend="strata", options={"codegen": codegen, **options})


def kernel_sources(folder: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(folder.rglob("kernels/*")))


def kernel_ir(folder: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(folder.rglob("2_kernel.mlir")))


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("name", list(REPRODUCERS))
def test_an_index_out_of_range_raises_as_in_eager(name, codegen):
    fn, make_args = REPRODUCERS[name]
    args = make_args()
    with pytest.raises((IndexError, RuntimeError)):
        fn(*args)  # eager raises (gather: RuntimeError)
    message = LLVM_MESSAGES[name] if codegen == "llvm" else "index out of bounds for dimension 0 with size 10"
    with pytest.raises(IndexError, match=message) as raised:
        compiled(fn, codegen)(*args)
    assert isinstance(raised.value, RuntimeError)  # what a caller of eager's gather catches
    assert "aten." in str(raised.value)  # it names the op that indexed


@pytest.mark.parametrize("codegen", CODEGENS)
def test_indices_in_range_negative_ones_included_give_eagers_values(codegen):
    x = torch.randn(6, 5)
    i, j = torch.tensor([0, -1, 5, -6, 2]), torch.tensor([[-5], [4], [-1]])

    def f(x, i, j):
        return x[i] * 2, x[i, j], torch.gather(x, 1, (j.abs() - 1).expand(3, 5)), x.index_select(1, i.abs() % 5)

    got = compiled(f, codegen)(x, i, j)
    for g, e in zip(got, f(x, i, j)):
        torch.testing.assert_close(g, e)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_the_error_names_the_dim_of_a_multi_dim_index(codegen):
    x = torch.randn(4, 5)
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 5"):
        compiled(lambda x, i, j: x[i, j] + 1, codegen)(x, torch.tensor([0, 3]), torch.tensor([4, 5]))


def test_index_put_raises_index_error_as_eager():
    f = lambda x, i: torch.index_put(x, (i,), torch.ones(2)) * 2  # noqa: E731
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 0 with size 10"):
        compiled(f, "llvm")(torch.arange(10.0), torch.tensor([1, 10]))


def test_embedding_bag_raises_and_sums_in_range():
    w = torch.randn(5, 3)
    f = lambda w, i, o: torch.nn.functional.embedding_bag(i, w, o, mode="sum")  # noqa: E731
    offsets = torch.tensor([0, 2])
    torch.testing.assert_close(compiled(f, "llvm")(w, torch.tensor([0, 4, 2, 1]), offsets), f(w, torch.tensor([0, 4, 2, 1]), offsets))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
        compiled(f, "llvm")(w, torch.tensor([0, 7, 2, 1]), offsets)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_a_check_inside_a_reduction_kernel(codegen):
    x = torch.randn(8, 50)  # rows that need a mask
    f = lambda x, i: x[i].softmax(-1)  # noqa: E731
    c = compiled(f, codegen)
    i = torch.tensor([3, -8, 7])
    torch.testing.assert_close(c(x, i), f(x, i))
    message = "index -9 is out of bounds for dimension 0 with size 8" if codegen == "llvm" else "dimension 0 with size 8"
    with pytest.raises(IndexError, match=message):
        c(x, torch.tensor([3, -9, 7]))


def test_a_parallel_kernel_reports_a_bad_index_from_any_thread():
    """Large enough to run on every core (llvm_parallel.PARALLEL_WORK): the one bad
    index is found whichever thread's chunk holds it, and a later good call is clean."""
    table = torch.randn(4096, 64)
    f = lambda t, i: torch.nn.functional.embedding(i, t) * 2  # noqa: E731
    c = compiled(f, "llvm")
    for where in (0, 40000, 65535):
        i = torch.randint(0, 4096, (65536,))
        i[where] = 4096 + where
        with pytest.raises(IndexError, match=f"index {4096 + where} is out of bounds for dimension 0 with size 4096"):
            c(table, i)
    i = torch.randint(0, 4096, (65536,))
    torch.testing.assert_close(c(table, i), f(table, i))


@pytest.mark.parametrize("codegen", CODEGENS)
def test_symbolic_sizes(codegen):
    f = lambda x, i: x[i] + 1  # noqa: E731
    c = torch.compile(f, backend="strata", dynamic=True, options={"codegen": codegen})
    for n in (7, 9):
        x = torch.randn(n, 3)
        torch.testing.assert_close(c(x, torch.tensor([0, -n, n - 1])), f(x, torch.tensor([0, -n, n - 1])))
        message = f"index {n} is out of bounds for dimension 0 with size {n}" if codegen == "llvm" else "dimension 0 with size s"
        with pytest.raises(IndexError, match=message):
            c(x, torch.tensor([0, n]))


@pytest.mark.parametrize("codegen", CODEGENS)
def test_with_checks_off_no_check_is_emitted(codegen, tmp_path):
    x, i = torch.arange(10.0), torch.tensor([1, 100000000])
    c = compiled(lambda x, i: x[i] * 2, codegen, index_bounds_checks=False, **{"trace.enabled": True, "trace.dir": str(tmp_path)})
    torch.testing.assert_close(c(x, i), torch.tensor([2.0, 18.0]))  # the nearest element, as before checks
    assert "prim.check_index" not in kernel_ir(tmp_path)
    source = kernel_sources(tmp_path)
    assert "device_assert" not in source and "atomicrmw" not in source and "errors" not in source


@pytest.mark.parametrize("codegen", CODEGENS)
def test_with_checks_on_the_kernel_carries_one(codegen, tmp_path):
    c = compiled(lambda x, i: x[i] * 2, codegen, **{"trace.enabled": True, "trace.dir": str(tmp_path)})
    c(torch.arange(10.0), torch.tensor([1, 2]))
    assert "prim.check_index" in kernel_ir(tmp_path)
    source = kernel_sources(tmp_path)
    header = next(line for line in source.splitlines() if "from aten ops:" in line)
    assert "aten.index.Tensor" in header and "aten.mul.Tensor" in header  # the kernel's header still names its ops
    assert ("tl.device_assert" if codegen == "triton" else "atomicrmw umax") in source


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, i: x[torch.arange(x.shape[0] - 1)] * 2,  # an arange within the dim
        lambda x, i: x[i.clamp(0, 9)] * 2,  # clamped by the program
        lambda x, i: x[i % 10] * 2,  # a remainder by the size
        lambda x, i: torch.gather(x, 1, x.topk(2, dim=1).indices) * 2,  # positions topk gives
    ],
    ids=["arange", "clamp", "remainder", "topk"],
)
def test_an_index_provably_in_range_is_not_checked(fn, tmp_path):
    x, i = torch.randn(10, 4), torch.tensor([1, 53, -3])
    c = compiled(fn, "llvm", **{"trace.enabled": True, "trace.dir": str(tmp_path)})
    torch.testing.assert_close(c(x, i), fn(x, i))
    assert "prim.check_index" not in kernel_ir(tmp_path)


def test_the_prim_reference_raises_as_a_kernel_does():
    from strata.dialects.prim_indexing import CheckIndexOp
    from strata.dialects.types import TensorType
    from xdsl.ir import Block

    block = Block(arg_types=[TensorType([3], "i64")] * 2)
    op = CheckIndexOp(*block.args, 1, True, "aten.index.Tensor")
    size = torch.full((3,), 4)
    assert op.reference(torch.tensor([0, -4, 3]), size).tolist() == [0, 0, 3]
    with pytest.raises(IndexOutOfBounds, match=r"index -5 is out of bounds for dimension 1 with size 4 \(aten.index.Tensor\)"):
        op.reference(torch.tensor([0, -5, 3]), size)


def test_a_kernel_read_from_the_caches_still_checks():
    """The second compile reads the program from the graph cache and the machine code
    from the kernel cache (a KernelText, parsed only for the message)."""
    f = lambda x, i: x[i] * 3  # noqa: E731
    x, bad = torch.arange(10.0), torch.tensor([2, 12])
    for _ in range(2):
        torch._dynamo.reset()
        with pytest.raises(IndexError, match="index 12 is out of bounds for dimension 0 with size 10"):
            compiled(f, "llvm")(x, bad)


KERNEL = """builtin.module {
kernel.func @k0 attributes {pointwise = [2 : i64], reduction = [], num_inputs = 2 : i64, symbols = [], sources = ["aten.index.Tensor"]} {
^bb0(%0: !kernel.buffer<i64>, %1: !kernel.buffer<f32>, %2: !kernel.buffer<f32>):
  %3 = kernel.load %0["x0"] : !kernel.buffer<i64> -> i64
  %4 = arith.constant 10 : i64
  %5 = prim.check_index %3, %4 {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (i64, i64) -> i64
  %6 = kernel.load %1["v0"] (%5 : i64) : !kernel.buffer<f32> -> f32
  kernel.store %6, %2["x0"] : f32, !kernel.buffer<f32>
}
}"""


@pytest.mark.parametrize("runner", ["interpreter", "llvm", "triton"])
def test_one_kernel_in_every_runner(runner):
    """The kernel interpreter (where a code generator declines a kernel) raises as the
    compiled kernels do."""
    from strata.dialects.context import parse_module

    func = parse_module(KERNEL).body.block.first_op
    if runner == "interpreter":
        from strata.runtime.interpreters import run_kernel

        run = lambda buffers: run_kernel(func, buffers, [])  # noqa: E731
    elif runner == "llvm":
        from strata.codegen.llvm_cpu import compile_kernel

        run = lambda buffers: compile_kernel(func)(buffers, [])  # noqa: E731
    else:
        from strata.codegen.triton_gpu import compile_kernel

        run = lambda buffers: compile_kernel(func, "cpu")(buffers, [])  # noqa: E731
    out = torch.empty(2)
    run([torch.tensor([1, -3]), torch.arange(10.0), out])
    assert out.tolist() == [1.0, 7.0]
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 10"):
        run([torch.tensor([1, 13]), torch.arange(10.0), out])


# Reads that compute fewer elements than the index holds, or none: eager checks every
# index the user gave all the same (passes/fusion/checked_indices.py).
PARTIAL_READS = {
    "embedding_of_empty_rows": (lambda w, i: torch.nn.functional.embedding(i, w), lambda: (torch.randn(4, 0), torch.tensor([1, 4]))),
    "every_other_row": (lambda x, i: x[i][::2] * 2, lambda: (torch.randn(5, 3), torch.tensor([0, 9]))),
    "index_select_of_empty_columns": (lambda x, i: x.index_select(0, i) + 1,
                                      lambda: (torch.randn(6, 0), torch.tensor([2, -6]))),
    "gather_then_first_column": (lambda x, i: x.gather(1, i)[:, :1] * 2,
                                 lambda: (torch.randn(3, 4), torch.tensor([[0, 1], [2, 3], [0, 4]]))),
}


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("name", list(PARTIAL_READS))
def test_an_index_no_element_reads_is_checked_all_the_same(name, codegen):
    fn, make_args = PARTIAL_READS[name]
    args = make_args()
    with pytest.raises((IndexError, RuntimeError)):
        fn(*args)
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(fn, codegen)(*args)


@pytest.mark.parametrize("name", list(PARTIAL_READS))
def test_indices_in_range_of_a_partial_read_give_eagers_values(name):
    fn, make_args = PARTIAL_READS[name]
    args = list(make_args())
    args[-1] = torch.zeros_like(args[-1])
    torch.testing.assert_close(compiled(fn, "llvm")(*args), fn(*args))


def test_a_read_wholly_computed_gets_no_check_of_its_own(tmp_path):
    """An embedding feeding the rest of the graph: its check stays in the gather's kernel."""
    fn = lambda w, i: torch.nn.functional.embedding(i, w).sum(-1)  # noqa: E731
    c = compiled(fn, "llvm", **{"trace.enabled": True, "trace.dir": str(tmp_path)})
    c(torch.randn(10, 4), torch.tensor([[1, 2], [3, 4]]))
    assert kernel_ir(tmp_path).count("kernel.func") == 1


@pytest.mark.parametrize("codegen", CODEGENS)
def test_a_gather_from_a_dim_empty_at_run_time_raises_before_reading(codegen):
    """arange(k % 7) is empty at k = 0: no element to read, every index out of range
    (the kernel's load would read an empty tensor: a null pointer)."""
    def f(k, i):
        return torch.arange(k % 7).gather(0, i) * 2

    c = torch.compile(f, backend="strata", dynamic=True, options={"codegen": codegen})
    for k in (4, 5):
        torch.testing.assert_close(c(k, torch.tensor([3, 1])), f(k, torch.tensor([3, 1])))
    with pytest.raises(RuntimeError):
        f(0, torch.tensor([0, 0]))
    # Triton's assert names the size as the kernel holds it (Mod(n…, 7)), not its value.
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size " + ("0" if codegen == "llvm" else "")):
        c(0, torch.tensor([0, 0]))


@pytest.mark.parametrize("codegen", CODEGENS)
def test_advanced_indexing_with_an_empty_result_checks_nothing_as_eager(codegen):
    """Eager's x[i] checks no index when the result is empty (x of shape [5, 0]), while
    index_select and embedding check theirs all the same."""
    fn = lambda x, i: x[i] + 1  # noqa: E731
    x, i = torch.randn(5, 0), torch.tensor([9, -7])
    torch.testing.assert_close(compiled(fn, codegen)(x, i), fn(x, i))


def test_index_select_from_an_empty_dim_raises_as_eager():
    fn = lambda x, i: x.index_select(0, i) + 1  # noqa: E731
    x, i = torch.randn(0, 3), torch.tensor([0])
    with pytest.raises(RuntimeError):
        fn(x, i)
    with pytest.raises(RuntimeError):
        compiled(fn, "llvm")(x, i)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_an_index_nothing_reads_inside_a_reduction_kernel_is_checked(codegen):
    """x has one element, so the gather reads it at any index: the check's result is
    read by nothing, in the kernel that also sums the indices (over rows)."""
    fn = lambda x, i: (x[i] * 2, i.sum())  # noqa: E731
    x = torch.randn(1)
    good, bad = torch.tensor([[0], [-1]]), torch.tensor([[-2], [-1]])
    c = compiled(fn, codegen)
    torch.testing.assert_close(c(x, good), fn(x, good))
    with pytest.raises(IndexError):
        fn(x, bad)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 1"):
        c(x, bad)


def test_an_eager_fallback_that_checks_indices_runs_though_its_result_is_unused():
    """index_select into an empty dim runs as eager's kernel (which raises); what reads
    its result is empty and needs none of it, and dead-code elimination kept it."""
    def fn(x, i, j):
        return (x.index_select(0, i) * 2).reshape(-1)[j]

    x, i, j = torch.zeros(0, 0, 5), torch.tensor([0]), torch.zeros(0, dtype=torch.long)
    with pytest.raises(RuntimeError):
        fn(x, i, j)
    with pytest.raises(RuntimeError):
        compiled(fn, "llvm")(x, i, j)
