"""The names of the attributes one level of strata writes for another to read.

Each is written by one layer and read by others (a pass and the runtime, the importer
and a pass); the name lives here, with the dialects, so that no layer imports another
for a string.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

# On a graph's func.func: the device type it runs on ("cpu", "cuda"), as the importer
# found it; rules whose eager kernels differ by device read it through graph_device.
DEVICE_ATTR = "strata.device"


def graph_device(op: Operation) -> str | None:
    """The device type of the graph `op` is (a func.func) or is in, or None where the
    graph names none (IR written by hand)."""
    fn = op
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    own = fn.attributes.get(DEVICE_ATTR) if fn is not None else None
    return own.data if isinstance(own, StringAttr) else None

# On a kernel.launch: each output's strides, where a kernel writes it in a layout other
# than row-major (passes/fusion/layouts.py); on a graph argument: its strides.
STRIDES_ATTR = "strata.strides"
# On a library op: the layout its result must have: channels-last (a convolution's), or
# sequence-major (an attention's [B, H, S, E] result laid out as [B, S, H, E], the way
# torch's fused attention kernels write it).
LAYOUT_ATTR = "strata.layout"
CHANNELS_LAST = "channels_last"
SEQUENCE_MAJOR = "sequence_major"
# On a kernel.launch: for each output, the index of the operand it updates, or -1 for a
# fresh one. An updated output starts as that operand's elements and the kernel writes
# only some of them (a scatter into a KV cache, passes/fusion/scatter_stores.py); the
# runtime writes into the operand's own memory where nothing else can see it change.
UPDATES_ATTR = "strata.updates"
# On a kernel.program: for each result, the strides eager gives it where they are a
# dense layout other than row-major, else [] (the runtime copies a result that comes
# out otherwise into them: runtime/compiled_graph.py).
RESULT_STRIDES_ATTR = "strata.result_strides"
# On a kernel.program specialized to a binding of its shape symbols
# (passes/specialize_symbols.py): the values, {name = value}, which its kernels (compiled
# for any value) read at each launch.
SYMBOL_VALUES_ATTR = "strata.symbol_values"
# On a graph argument: the storage offset torch traced it at, where an as_strided reads
# its storage (frontend/capture/storage_offsets.py, passes/decompositions/copies.py).
STORAGE_OFFSET = "strata.storage_offset"
# On a prim.sum of products that a matrix product became (passes/matmul_to_dot.py), and
# on the kernel.reduce lowered from it: the Triton generator runs it as a tl.dot template
# (codegen/triton_matmul.py) at this precision: "ieee" (f32 products) or "tf32"
# (products of f32 inputs rounded to TF32, where torch allows it for matmuls).
DOT_ATTR = "strata.dot"
# On such a prim.sum and the rounding of its result: the product is realized as it is,
# with no epilogue fused into its kernel (the option epilogue_fusion=False).
NO_EPILOGUE_ATTR = "strata.no_epilogue"
# On a marked prim.sum that is a 2-d convolution (passes/convolution_to_dot.py): its
# stride, padding, dilation and operand shapes, for the template's library call (cuDNN).
CONVOLUTION_ATTR = "strata.convolution"


def convolution_params(attr) -> dict[str, tuple[int, ...]]:
    """CONVOLUTION_ATTR's fields (a dictionary of comma-separated ints) as tuples."""
    return {k: tuple(int(v) for v in attr.data[k].data.split(",")) for k in ("stride", "padding", "dilation", "x", "w")}
