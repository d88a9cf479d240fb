"""Memory layouts of the buffers inside a program: channels-last around convolutions,
and attention results as torch's fused attention writes them (`attention_layouts`).

A 2-D convolution in oneDNN (CPU) and cuDNN runs faster on NHWC tensors than on NCHW
ones (a quarter faster for a 3×3, 64-channel convolution on this machine's CPU,
docs/performance-history.md). So a convolution's result is laid out channels-last, and so is a
kernel output that a convolution reads: the kernels between two convolutions (batch
norm, activation, residual add) read and write NHWC through their index expressions,
and no copy is made. A value the graph returns keeps the layout eager gives it
(`result_layouts`): contiguous, or the channels-last or transposed layout eager's
result has, which the kernel making it writes directly.

What is left is converting what no kernel makes (graph inputs: the activation, the
weights) and the last convolution's result before a graph result. On a GPU the runtime
converts them (cuDNN's NHWC convolutions gain more than the copies cost). On the CPU
each such conversion in the runtime is a torch copy: a pass over the tensor and an
OpenMP region of its own, whose barrier waits for every thread of the team, and on a
core shared with other work a thread the OS runs late makes that region cost a
scheduler time slice (milliseconds), not the copy's fraction of one. So on the CPU
nothing is left to the runtime (`copy_convolution_inputs`, `choose_layouts`): a graph
input a convolution reads is copied to NHWC by a kernel (on a busy machine strata's
kernels run on its own pool, which never waits for a late thread:
codegen/llvm_pool.py), and a convolution's result stays NHWC whatever reads it, the
kernel that reads it converting as it goes; TorchInductor makes the same choices on
the CPU. On the CPU suite's ResNet block (docs/performance-history.md) that made calls
1.4–1.9× faster while another process kept a core busy, and changed little on a quiet
machine, where the kernels' layout changes cost what torch's copies did.

The layout travels in the program as attributes the runtime and the interpreters read:
`strata.layout = "channels_last"` on a convolution (`"sequence_major"` on an attention),
`strata.strides` (the strides of each output) on a kernel.launch whose outputs are not
contiguous.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy

from xdsl.dialects import func
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from strata.dialects import prim
from strata.dialects.attributes import CONVOLUTION_ATTR, STRIDES_ATTR, graph_device
from strata.dialects.types import Dim, TensorType, sym
from strata.passes.fusion.plan import Plan, view_root



def channels_last_strides(dims: Sequence[Dim]) -> tuple[Dim, ...]:
    n, c, h, w = (sym(d) for d in dims)
    return tuple(_dim(e) for e in (c * h * w, 1, w * c, c))


def _dim(e) -> Dim:
    e = sympy.sympify(e)
    return int(e) if e.is_Integer else e


def on_cpu(fn: func.FuncOp) -> bool:
    """Whether the graph runs on the CPU (its `strata.device`; unknown counts as not)."""
    return graph_device(fn) == "cpu"


def copy_convolution_inputs(fn: func.FuncOp) -> int:
    """On the CPU, puts an identity conversion (`prim.convert_element_type` to the same
    dtype, which fusion makes a kernel) between each graph input and the 2-D
    convolutions that read it (those whose result the graph does not return, which run
    NHWC), so that a kernel writes it NHWC (`choose_layouts`) instead of the runtime
    copying it on every call; returns how many. Weights of one shape are copied by one
    kernel (fusion groups kernels of one domain)."""
    if not on_cpu(fn):
        return 0
    given = _given_strides(fn)
    ret = fn.body.block.last_op
    returned = {view_root(v) for v in ret.operands} if ret is not None else set()
    copies: dict[SSAValue, SSAValue] = {}
    for op in [o for o in fn.walk() if isinstance(o, prim.ConvolutionOp) and _rank(o.results[0]) == 4]:
        if op.results[0] in returned:
            continue  # its result stays NCHW (`choose_layouts`): so do its operands
        for i in (0, 1):
            v = op.operands[i]
            if not isinstance(view_root(v), BlockArgument) or _rank(v) != 4:
                continue
            if given.get(v) == channels_last_strides(v.type.dims):
                continue  # already NHWC: the runtime's conversion is no copy
            if v not in copies:
                copy = prim.ConvertElementTypeOp(v, v.type.dtype)
                if "strata.source" in op.attributes:
                    copy.attributes["strata.source"] = op.attributes["strata.source"]
                Rewriter.insert_op(copy, InsertPoint.before(op))
                copies[v] = copy.results[0]
            op.operands[i] = copies[v]
    return len(copies)


def choose_layouts(
    ops: list[Operation], outputs: list[SSAValue], plan: Plan, stored: set[SSAValue], cpu: bool = False,
    results: dict[SSAValue, tuple[Dim, ...]] | None = None,
) -> dict[SSAValue, tuple[Dim, ...]]:
    """The values laid out other than contiguously, with their strides. `cpu`: every
    convolution result the graph does not return is NHWC (module docstring).
    `results`: the returned kernel outputs' layouts (`result_layouts`), included: a
    kernel writing a graph result channels-last, as eager returns it after a
    convolution of a channels-last input, writes NHWC like one a convolution reads."""
    returned = {plan.source_of(v) for v in outputs}
    convolutions = [op for op in ops if isinstance(op, prim.ConvolutionOp) and _rank(op.results[0]) == 4]
    layouts: dict[SSAValue, tuple[Dim, ...]] = dict(results or {})
    templates = [op for op in ops if CONVOLUTION_ATTR in op.attributes]
    if templates:
        _template_layouts(templates, layouts, plan, stored, returned)
    if not convolutions:
        if templates and not cpu:
            _back_through_kernels(layouts, plan, stored, returned, _kernels_reading(plan))
        return layouts
    # Kernel outputs a convolution reads: its input, and its weight where a kernel
    # makes that (autocast's cast of an f32 weight to bf16), which would otherwise be
    # reordered by a copy on every call.
    for op in convolutions:
        for x in op.operands[:2]:
            if x in stored and x in plan.kernel_of and x not in returned and _rank(x) == 4:
                layouts[x] = channels_last_strides(x.type.dims)
    # Convolution results, where what reads them goes on in NHWC: another convolution,
    # or a kernel that writes NHWC. On a GPU a kernel that reads one layout and writes
    # the other gathers across channels on every element, which costs more than the
    # library's own reorder (the last convolution before a graph result stays
    # contiguous); on the CPU that reorder is a torch copy, so the kernel converts.
    readers = _kernels_reading(plan)
    if not cpu:
        _back_through_kernels(layouts, plan, stored, returned, readers)
    for op in convolutions:
        r = op.results[0]
        if r in returned:
            continue
        direct = any(isinstance(u.operation, prim.ConvolutionOp) for u in r.uses)
        kernels = readers.get(r, [])
        if cpu or direct or any(any(_nhwc(n, layouts) for n in k.nodes) for k in kernels):
            layouts[r] = channels_last_strides(r.type.dims)
    return layouts




def _template_layouts(templates: list[Operation], layouts: dict, plan: Plan, stored: set[SSAValue],
                      returned: set[SSAValue]) -> None:
    """Convolutions as matmul templates (max-autotune, passes/convolution_to_dot.py) are
    laid out as cuDNN's are: x and w NHWC where a kernel makes them (the template's k
    steps over channels innermost, and its library tile is cuDNN's NHWC convolution),
    and what the template's kernel stores NHWC (the next convolution's input)."""
    from strata.passes.convolution_to_dot import convolution_operands

    extern_reads = {plan.source_of(v) for op in plan.schedule if isinstance(op, Operation) for v in op.operands}

    def nhwc(v: SSAValue) -> None:
        if v in stored and v in plan.kernel_of and v not in returned and v not in extern_reads and _rank(v) == 4:
            layouts[v] = channels_last_strides(v.type.dims)

    for op in templates:
        for x in convolution_operands(op):
            nhwc(view_root(x))
        kernel = plan.kernel_of.get(op.results[0])
        for v in kernel.nodes if kernel is not None else ():
            nhwc(v)


def sequence_major_strides(dims: Sequence[Dim]) -> tuple[Dim, ...]:
    """The strides of [B, H, S, E] laid out as [B, S, H, E]."""
    b, h, s, e = (sym(d) for d in dims)
    return tuple(_dim(x) for x in (s * h * e, e, h * e, 1))


def attention_layouts(ops: list[Operation], outputs: list[SSAValue], plan: Plan) -> dict[SSAValue, tuple[Dim, ...]]:
    """On a GPU: attention results read only by kernels, laid out as torch's fused
    attention writes them ([B, S, H, E] in memory). Made contiguous, each cost a copy
    of its own before the kernel (the output projection's matmul template, under
    max-autotune: 9.5 µs a layer of GPT-2; in training, three a layer for dq, dk and
    dv, 25 µs each for a GPT of d 1024 at 8k tokens); the kernel reads the layout
    through its index instead. A result a library call, a view the program keeps, or
    the graph reads stays as it was."""
    from strata.dialects.prim_attention import ScaledDotProductAttentionOp
    from strata.dialects.prim_attention_training import SdpaBackwardOp

    returned = {plan.source_of(v) for v in outputs}
    extern_reads = {plan.source_of(v) for op in plan.schedule if isinstance(op, Operation) for v in op.operands}
    readers = _kernels_reading(plan)
    layouts: dict[SSAValue, tuple[Dim, ...]] = {}
    for op in ops:
        # the backward's dq, dk and dv: all or none (the layout is the op's), each as
        # the backward kernels write them, read by the kernel that stacks them for the
        # product with the projection's weight
        if not isinstance(op, ScaledDotProductAttentionOp | SdpaBackwardOp):
            continue
        rs = list(op.results)
        if all(_rank(r) == 4 and r not in returned and r not in extern_reads and readers.get(r) for r in rs):
            layouts.update((r, sequence_major_strides(r.type.dims)) for r in rs)
    return layouts


def eager_result_strides(fn: func.FuncOp, outputs: list[SSAValue]) -> list[tuple[Dim, ...] | None]:
    """For each result, its traced strides (@graph's result attribute `strata.strides`,
    from the importer) where they are a dense layout other than row-major, else None."""
    attrs = fn.res_attrs.data if fn.res_attrs is not None else [None] * len(outputs)
    out: list[tuple[Dim, ...] | None] = []
    for v, d in zip(outputs, attrs):
        given = d.data.get(STRIDES_ATTR) if d is not None else None
        strides = tuple(at_least_one_sized(s) for s in prim.dims_of(given)) if given is not None else None
        keep = strides is not None and len(strides) == _rank(v) and is_permuted_dense(v.type.dims, strides)
        out.append(strides if keep else None)
    return out


def result_layouts(outputs: list[SSAValue], wanted: list[tuple[Dim, ...] | None], plan: Plan,
                   stored: set[SSAValue]) -> dict[SSAValue, tuple[Dim, ...]]:
    """The returned kernel outputs eager lays out otherwise than row-major, with those
    strides: the kernel writes them so, and the runtime has no copy left to make."""
    layouts: dict[SSAValue, tuple[Dim, ...]] = {}
    for v, strides in zip(outputs, wanted):
        if strides is not None and v in plan.kernel_of and v in stored:
            layouts.setdefault(v, strides)
    return layouts


def at_least_one_sized(stride: Dim) -> Dim:
    """A traced stride with torch's guard against empty dims taken out: TensorIterator
    writes a broadcast result's strides as products of Max(1, size), which are the
    products of the sizes wherever the tensor has an element (and an empty tensor's
    strides address nothing)."""
    if isinstance(stride, int):
        return stride
    one_sized = stride.replace(lambda e: isinstance(e, sympy.Max) and len(e.args) == 2 and sympy.Integer(1) in e.args,
                               lambda e: next(a for a in e.args if a != 1))
    return int(one_sized) if one_sized.is_Integer else one_sized


def is_permuted_dense(dims: Sequence[Dim], strides: Sequence[Dim]) -> bool:
    """Whether `strides` lay `dims` out in memory without gaps or overlaps in an order
    other than row-major, for every value of the shape symbols: from the innermost dim
    out, each stride is the product of the sizes inside it. Those are the layouts a
    kernel writes and torch.empty_strided makes; dims of size 1 address nothing."""
    pairs = [(sym(d), sym(s)) for d, s in zip(dims, strides) if sym(d) != 1]
    if _packed(list(reversed(pairs))):
        return False  # row-major already
    inside: sympy.Expr = sympy.Integer(1)
    while pairs:
        innermost = [p for p in pairs if sympy.expand(p[1] - inside) == 0]
        if len(innermost) != 1:
            return False
        pairs.remove(innermost[0])
        inside = inside * innermost[0][0]
    return True


def _packed(inner_first: list[tuple[sympy.Expr, sympy.Expr]]) -> bool:
    inside: sympy.Expr = sympy.Integer(1)
    for size, stride in inner_first:
        if sympy.expand(stride - inside) != 0:
            return False
        inside = inside * size
    return True


def _back_through_kernels(layouts: dict, plan: Plan, stored: set[SSAValue], returned: set[SSAValue], readers: dict) -> None:
    """On a GPU, a kernel output that only kernels writing NHWC read (and no library
    call, view or graph result) is written NHWC too, back along a chain of kernels: the
    kernels then read and write one layout, and the convolution before them writes NHWC
    (the conversion is left where NHWC begins, at the graph's input). Without it,
    resnet18's max pool read its NCHW input to write NHWC, gathering across channels:
    0.121 ms a call against 0.037 for the same pool in one layout."""
    extern_reads = {
        plan.source_of(v)
        for op in plan.schedule
        if isinstance(op, Operation) and not isinstance(op, prim.ConvolutionOp)
        for v in op.operands
    }
    changed = True
    while changed:
        changed = False
        for x in plan.kernel_of:
            if x in layouts or x in returned or x not in stored or x in extern_reads or _rank(x) != 4:
                continue
            kernels = readers.get(x)
            if kernels and all(_writes_nhwc(k, layouts, stored) for k in kernels):
                layouts[x] = channels_last_strides(x.type.dims)
                changed = True


def _writes_nhwc(kernel, layouts: dict, stored: set[SSAValue]) -> bool:
    outs = [n for n in kernel.nodes if n in stored and _rank(n) == 4]
    return bool(outs) and all(_nhwc(n, layouts) for n in outs)


def _nhwc(v: SSAValue, layouts: dict) -> bool:
    """Whether `layouts` lays v out channels-last (and not in another order: a graph
    result may come transposed otherwise)."""
    strides = layouts.get(v)
    if strides is None or _rank(v) != 4:
        return False
    return all(sympy.expand(sym(a) - sym(b)) == 0 for a, b in zip(strides, channels_last_strides(v.type.dims)))


def _given_strides(fn: func.FuncOp) -> dict[SSAValue, tuple[Dim, ...]]:
    """The strides the graph's inputs arrive with (`strata.strides`, from the trace)."""
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    out = {}
    for arg, d in zip(fn.body.block.args, attrs):
        strides = d.data.get(STRIDES_ATTR)
        if strides is not None:
            out[arg] = tuple(at_least_one_sized(s) for s in prim.dims_of(strides))
    return out


def _kernels_reading(plan: Plan) -> dict[SSAValue, list]:
    """For each realized value, the kernels whose nodes read it."""
    from strata.passes.fusion.plan import node_reads

    out: dict[SSAValue, list] = {}
    for v, k in plan.kernel_of.items():
        for value, _ in node_reads(v, k.domain, plan.realized):
            out.setdefault(value, []).append(k)
    return out


def _rank(v: SSAValue) -> int:
    return len(v.type.dims) if isinstance(v.type, TensorType) else -1
