"""A `kernel.program` as a Python callable.

At construction every step of the program becomes a closure over precomputed data, so
that a call does as little Python as possible: values live in a list of registers (one
slot per SSA value, numbered at construction), the shape symbols are bound by a plan
made in advance (which argument dim gives which symbol), and each step reads and
writes registers: allocate a launch's outputs and call its kernel (compiled kernels
through their raw entry point); run a library call or view (torch; views, mm and bmm
of static shapes and a convolution's gradients (runtime/convolution_backward.py) with
their arguments worked out once, the others through the prim op's reference); run an
eager fallback (aten op); draw the graph's random seeds, all at once
(runtime/random_seeds.py). Inputs laid out differently from what the kernels were
compiled for are copied into that layout first; results that eager lays out otherwise
than the program made them (channels-last, transposed: `strata.result_strides`,
passes/fusion/layouts.py) are copied into eager's layout last.

A call runs no loop over these closures: the arguments' checks and the steps are
generated as straight-line Python at construction (`_entry`, runtime/graph_runner.py),
with the common steps (static launches, views, matrix products) written out as
statements and static views made without torch's dispatcher (runtime/views.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, SSAValue

from strata.dialects import aten
from strata.dialects import kernel as kd
from strata.dialects.kernel_text import Kernel
from strata.dialects import prim
from strata.dialects.prim import PrimOp
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.dialects.prim_attention_training import FUSED_ATTENTION_OPS, fused_attention_call
from strata.dialects.prim_complex import COMPLEX_VIEW_OPS
from strata.dialects.prim_convolution_backward import CONVOLUTION_BACKWARD_OPS
from strata.dialects.prim_random import RandomSeedOp
from strata.dialects.types import DTYPES, Dim, TensorType, bound_symbols, concrete, sym
from strata.runtime.convolution_backward import convolution_backward_step
from strata.runtime.allocation import as_sequence_major, contiguous_strides, fast_empty_strided, relayout
from strata.runtime.cpu_linear import onednn_product
from strata.runtime.layouts import launch_strides, result_format, result_strides, sequence_major
from strata.runtime.graph_runner import InlineStep, generate_runner
from strata.runtime.in_place import in_place_scatters, in_place_updates, scatter_into_step, update_step
from strata.runtime import shared_workspace
from strata.runtime.memory_plan import MemoryPlan, plan_memory
from strata.runtime.views import SymbolicViewCache, ViewCache, reinterpret, view_step_code
from strata.runtime.random_seeds import draw_seeds_step
from strata.runtime.specialized_graphs import Specializations, binding_key
from strata.runtime.library_calls import static_dims as _static, static_library_call
from strata.dialects.prim_collectives import COLLECTIVE_OPS, COMMUNICATION_OPS
from strata.dialects.prim_data_dependent import DATA_DEPENDENT_OPS
from strata.runtime.collectives import communication_step
from strata.runtime.data_dependent import data_dependent_step, unbound_result_dims

Step = Callable[[list, dict], None]
# GPU workspaces this large share one arena per stream (runtime/shared_workspace.py);
# smaller ones stay the graph's own.
SHARED_WORKSPACE_BYTES = 16 << 20


# How many bindings of its symbols a size function keeps the dims of.
SIZES_KEPT = 64


def size_fn(dims: Sequence[Dim]) -> Callable[[dict[str, int]], tuple[int, ...]]:
    """A fast function from symbol bindings to concrete dims: exact (sympy's integer
    arithmetic), never through floats. The dims are kept per binding of the symbols
    they name, so that a call with the sizes of an earlier one costs one dict lookup
    (a graph of symbolic sizes runs with the same few bindings again and again)."""
    exprs = [sym(d) for d in dims]
    if all(e.is_Integer for e in exprs):
        fixed = tuple(int(e) for e in exprs)
        return lambda env: fixed
    names = sorted({s.name for e in exprs for s in e.free_symbols})
    kept: dict[tuple[int, ...], tuple[int, ...]] = {}

    def sizes(env: dict[str, int]) -> tuple[int, ...]:
        key = tuple([env[n] for n in names])
        got = kept.get(key)
        if got is None:
            if len(kept) >= SIZES_KEPT:
                kept.clear()
            got = kept[key] = tuple(concrete(exprs, env))
        return got

    return sizes


@dataclass
class CompiledGraph:
    """The callable for one kernel.program; `kernels` maps kernel names to compiled code."""

    module: ModuleOp
    compile_kernel: Callable[[Kernel], Callable[[list, list], None]]
    device: torch.device
    kernels: dict[str, Any] = field(default_factory=dict)
    # The kernels by name, where they are not kernel.funcs of `module` (a warm compile's
    # KernelTexts, dialects/kernel_text.py).
    funcs: dict[str, Kernel] | None = None
    # {result index: argument index}: results that are new values of arguments, which
    # the caller writes back (runtime/in_place.py); their scatters may write in place.
    written_back: dict[int, int] = field(default_factory=dict)
    # A program of symbolic sizes specialized to a binding of its symbols (the pass
    # specialize-symbols, which the frontend hands in: the runtime imports no pass).
    # Given, the graph runs the bindings it meets again as static graphs
    # (runtime/specialized_graphs.py).
    specialize: Callable[[kd.ProgramOp, dict[str, int]], kd.ProgramOp] | None = None

    def __post_init__(self) -> None:
        self.program = next(op for op in self.module.ops if isinstance(op, kd.ProgramOp))
        # The values of the shape symbols a specialized program has in place of them
        # (runtime/specialized_graphs.py), which its kernels read at each launch.
        self.binding = self.program.symbol_values or None
        funcs = self._funcs = self.funcs if self.funcs is not None else {
            op.sym_name.data: op for op in self.module.ops if isinstance(op, kd.FuncOp)
        }
        self.arg_types = [a.type for a in self.program.block.args]
        self.arg_symbols = self.program.symbol_names
        self._slots: dict[SSAValue | tuple, int] = {}
        self._arguments = [self._slot(a) for a in self.program.block.args]
        self._binders = self._binding_plan()
        self._layouts = [
            _layout_check(t, s) if isinstance(t, TensorType) else None
            for t, s in zip(self.arg_types, self.program.strides)
        ]
        self._enter = self._entry()
        self.steps: list[Step] = []
        self._precompile: dict[int, tuple[Any, list[torch.dtype], list[int]]] = {}
        self._fresh_products: set[int] = set()  # result slots of oneDNN products (no out=)
        self._first_call_jobs: list | None = []  # None once the first call has run them
        step_ops = []
        in_place = in_place_scatters(self.program, self.written_back)
        self._updated_in_place = in_place_updates(self.program, self.written_back)
        self._updated: set[int] = set()  # slots of launch outputs that update an operand
        seeds = [op for op in self.program.block.ops if isinstance(op, RandomSeedOp)]
        for op in self.program.block.ops:
            if isinstance(op, RandomSeedOp):  # one draw, at the first, for all of them
                if op is not seeds[0]:
                    continue
                self.steps.append(draw_seeds_step([self._slot(s.result) for s in seeds], self.device))
            elif isinstance(op, kd.LaunchOp):
                self.steps.append(self._launch_step(op, funcs[op.callee.string_value()]))
            elif isinstance(op, kd.ReturnOp):
                self.results = list(op.values)
                self._result_slots = [self._slot(v) for v in op.values]
                continue
            elif isinstance(op, DATA_DEPENDENT_OPS):  # torch's kernel, then bind its symbol
                self.steps.append(data_dependent_step(op, self._slot, self.device))
            elif isinstance(op, aten.AtenOp):
                self.steps.append(self._eager_step(op))
            elif isinstance(op, COMMUNICATION_OPS):
                self.steps.append(communication_step(op, self._slot))
            elif op in in_place:
                self.steps.append(scatter_into_step(op, self._slot))
            elif isinstance(op, PrimOp):
                self.steps.append(self._library_step(op))
            else:
                raise ValueError(f"the runtime cannot run {op.name}")
            step_ops.append(op)
        if self._precompile:  # the Triton kernels compiled side by side, now
            from strata.codegen.triton_precompile import precompile

            precompile(list(self._precompile.values()), self.device)
            self._precompile.clear()
        self._relayouts = self._result_relayouts()
        self._registers = len(self._slots)
        self._plan = self._with_frees(step_ops)
        self._run, self.runner_source = generate_runner(self._plan, f"{len(self._plan)} steps")
        self._memory = self._memory_plan(step_ops)
        self._workspaces: dict[Any, list[list[tuple[int, torch.Tensor]]]] = {}
        self.shared_views: dict[Any, list[tuple[int, torch.Tensor]]] = {}  # of the stream's arena
        # On CUDA a workspace belongs to one stream: the kernels of two calls on one
        # stream run in order, those of calls on two streams could overlap.
        self._stream = torch.cuda.current_stream if self.device.type == "cuda" else (lambda: None)
        keyed = binding_key(self.arg_types, self.arg_symbols) if self.binding is None and self.specialize else None
        self.specializations = None if keyed is None else Specializations(*keyed, self._specialize)

    def _specialize(self, binding: dict[str, int]) -> CompiledGraph:
        """This graph's program with `binding`'s values for its symbols, compiled with
        the kernels compiled here."""
        program = self.specialize(self.program, binding)
        return CompiledGraph(ModuleOp([program]), self._compile_once, self.device, funcs=self._funcs,
                             written_back=self.written_back)

    def _compile_once(self, func: Kernel) -> Any:
        compiled = self.kernels.get(func.sym_name.data)
        return compiled if compiled is not None else self.compile_kernel(func)

    def _memory_plan(self, step_ops: list) -> MemoryPlan | None:
        """Workspace offsets for the intermediates (runtime/memory_plan.py)."""
        steps, shapes, plannable = [], {}, set()
        for op in step_ops:
            operands = [self._slot(v) for v in op.operands]
            results = [self._slot(v) for v in op.results]
            steps.append((operands, results, isinstance(op, (aten.AtenOp, *prim.VIEW_OPS, *COMPLEX_VIEW_OPS))))
            out_strides = launch_strides(op) if isinstance(op, kd.LaunchOp) else [None] * len(results)
            for v, slot, st in zip(op.results, results, out_strides):
                static = _static(v.type.dims) if isinstance(v.type, TensorType) else None
                strides = None if st is None else _static(st)
                if static is None or (st is not None and strides is None):
                    shapes[slot] = None
                else:
                    shapes[slot] = (tuple(static), DTYPES[v.type.dtype], None if strides is None else tuple(strides))
            if isinstance(op, kd.LaunchOp) or isinstance(op, prim.MmOp | prim.BmmOp | prim.AddmmOp):
                plannable.update(r for r in results if r not in self._fresh_products and r not in self._updated)
        # A collective may still read its operand after the step that issued it (on the
        # communication stream, until its wait): that memory is not the workspace's to reuse.
        plannable -= {self._slot(_view_root(v)) for op in step_ops if isinstance(op, COLLECTIVE_OPS) for v in op.operands}
        plan = plan_memory(steps, shapes, plannable, set(self._result_slots))
        return plan if plan.values else None

    def _with_frees(self, step_ops: list) -> list[tuple[Step, tuple[int, ...]]]:
        """Each step with the registers to drop after it: the values no later step reads
        and the graph does not return, so that their memory goes back to the allocator
        at once (the next outputs reuse it while it is still in cache), as in eager."""
        last: dict[int, int] = {}
        for i, op in enumerate(step_ops):
            for v in op.operands:
                last[self._slot(v)] = i
            for v in op.results:
                last.setdefault(self._slot(v), i)
        keep = set(self._result_slots) | set(self._arguments)
        frees: list[list[int]] = [[] for _ in step_ops]
        for slot, i in last.items():
            if slot not in keep:
                frees[i].append(slot)
        return [(step, tuple(f)) for step, f in zip(self.steps, frees)]

    def _slot(self, v: SSAValue) -> int:
        return self._slots.setdefault(v, len(self._slots))

    # ------------------------------------------------------------ arguments
    def _binding_plan(self) -> dict[int, Callable[[Sequence[Any], dict[str, int]], None]]:
        """One check-and-bind function per argument that needs one: the tensor
        arguments' ranks are checked, bare-symbol dims and `index` arguments bind shape
        symbols."""
        plan = {}
        for i, t in enumerate(self.arg_types):
            if isinstance(t, TensorType):
                symbols = [(k, d.name) for k, d in enumerate(t.dims) if isinstance(d, sympy.Symbol)]
                plan[i] = _tensor_binder(i, t.rank, symbols)
            elif i < len(self.arg_symbols) and self.arg_symbols[i]:
                plan[i] = _index_binder(i, self.arg_symbols[i])
        return plan

    def _entry(self) -> Callable[[Sequence[Any], list, dict], None]:
        """A generated function that checks the arguments, binds the shape symbols and
        puts each argument, laid out as the kernels want it, in its register. An
        argument of static sizes and strides costs one stride comparison (equal strides
        imply a tensor of the right rank); the others go through their binder, then
        their layout check, as before. A wrong argument fails on the fast path with some
        error; __call__ then runs the binders, which name the problem."""
        names: dict[str, Any] = {}
        binds, places = [], []
        for i, (slot, t, strides) in enumerate(zip(self._arguments, self.arg_types, self.program.strides)):
            exact = _static(strides) if isinstance(t, TensorType) else None
            if exact is not None and _static(t.dims) is not None:
                names[f"relayout{i}"] = _checked_layout(i, t.rank, self._layouts[i])
                places.append(f"a = args[{i}]")
                places.append(f"regs[{slot}] = a if a.stride() == {tuple(exact)!r} else relayout{i}(a, env)")
                continue
            if i in self._binders:
                names[f"bind{i}"] = self._binders[i]
                binds.append(f"bind{i}(args, env)")
            if self._layouts[i] is not None:
                names[f"layout{i}"] = self._layouts[i]
                places.append(f"regs[{slot}] = layout{i}(args[{i}], env)")
            else:
                places.append(f"regs[{slot}] = args[{i}]")
        body = binds + places or ["pass"]
        source = "def enter(args, regs, env):\n" + "".join(f"    {line}\n" for line in body)
        exec(compile(source, "<strata graph entry>", "exec"), names)
        return names["enter"]

    # ------------------------------------------------------------ steps
    def _precompile_job(self, compiled: Any, op: kd.LaunchOp, names: Sequence[str] = ()) -> None:
        """Queues a Triton kernel's module for codegen/triton_precompile.py: a static one
        now, one of symbolic sizes (`names`: its symbols) for the first call."""
        module = getattr(compiled, "module", None)
        if self.device.type != "cuda" or module is None or getattr(compiled, "run", None) is not module.launch:
            return  # not a Triton module on a GPU, or one max-autotune times at its first call
        values = [*op.args, *op.outs]
        if all(isinstance(v.type, TensorType) for v in values):
            dtypes = [DTYPES[v.type.dtype] for v in values]
            if names:
                self._first_call_jobs.append((module, dtypes, list(names)))
            else:
                self._precompile.setdefault(id(module), (module, dtypes, []))

    def _precompile_for(self, env: dict[str, int]) -> None:
        """The first call's precompile of the symbolic kernels, for its sizes."""
        jobs, self._first_call_jobs = self._first_call_jobs, None
        if not jobs:
            return
        from strata.codegen.triton_precompile import precompile

        ready = {}
        for module, dtypes, names in jobs:
            if all(n in env for n in names):  # not symbols a data-dependent op binds later
                ready.setdefault((id(module), tuple(env[n] for n in names)), (module, dtypes, [env[n] for n in names]))
        precompile(list(ready.values()), self.device)

    def _bound_launch(self, compiled: Any, names: Sequence[str]) -> Callable[[list], None] | None:
        """In a specialized graph, a Triton kernel of symbolic sizes launched as a
        function of its buffers alone: its tile and grid for the binding's values,
        worked out once (CompiledKernel.bind)."""
        bind = getattr(compiled, "bind", None)
        if not names or not self.binding or bind is None or any(n not in self.binding for n in names):
            return None
        return bind([self.binding[n] for n in names])

    def _launch_step(self, op: kd.LaunchOp, func: Kernel) -> Step:
        updated = {self._slot(r) for r, j in zip(op.outs, op.updates or ()) if j != -1}
        launch = self._launch(op, func, updated)
        if not updated:
            return launch
        # each output that updates an operand starts as it (runtime/in_place.py); the
        # launch then writes into that register rather than a new buffer
        update = update_step(op, self._slot, self._updated_in_place)
        self._updated |= updated

        def both(regs: list, env: dict) -> None:
            update(regs, env)
            launch(regs, env)

        return InlineStep(update.code + launch.code, {**update.names, **launch.names}, both, launch.comment)

    def _launch(self, op: kd.LaunchOp, func: Kernel, updated: set[int]) -> InlineStep:
        """The launch step; `updated`: the slots of outputs whose register is set
        before it (an updated operand), which it does not allocate."""
        self.kernels[func.sym_name.data] = compiled = self.compile_kernel(func)
        kernel = getattr(compiled, "run", compiled)  # the launch itself, one call fewer
        ins = [self._kernel_input_slot(v) for v in op.args]
        strides = launch_strides(op)
        outs = [
            (self._slot(v), _static(v.type.dims), size_fn(v.type.dims), DTYPES[v.type.dtype], st)
            for v, st in zip(op.outs, strides)
        ]
        names = func.symbol_names
        device = self.device
        launch = getattr(compiled, "launch", None)  # compiled code: pointers straight in
        empty = torch.empty

        static_strides = [None if st is None else _static(st) for *_, st in outs]
        static = all(o[1] is not None for o in outs) and all(
            s is not None or st is None for s, (*_, st) in zip(static_strides, outs)
        )
        fixed = [(slot, static, dtype, s) for (slot, static, _, dtype, _), s in zip(outs, static_strides)]
        if static and launch is None:  # a Triton kernel: tensors in
            self._precompile_job(compiled, op, names)
            alloc = fast_empty_strided(device)
            planned = [
                (slot, tuple(sizes), tuple(contiguous_strides(sizes) if st is None else st), dtype)
                for slot, sizes, dtype, st in fixed
            ]

            bound = self._bound_launch(compiled, names)

            def tensors_step(regs: list, env: dict) -> None:
                buffers = [regs[i] for i in ins]
                for slot, sizes, st, dtype in planned:
                    t = regs[slot]  # its place in the workspace, if planned
                    if t is None:
                        t = regs[slot] = alloc(sizes, st, dtype)
                    buffers.append(t)
                if bound is not None:
                    bound(buffers)
                else:
                    kernel(buffers, [env[n] for n in names] if names else ())

            if bound is not None:
                return _inline_launch(func, "{bound}", ins, planned, None, {"bound": bound, "alloc": alloc}, tensors_step)
            return _inline_launch(func, "{kernel}", ins, planned, names, {"kernel": kernel, "alloc": alloc}, tensors_step)
        if static:

            def step(regs: list, env: dict) -> None:
                pointers = [regs[i].data_ptr() for i in ins]
                for slot, sizes, dtype, st in fixed:
                    t = regs[slot]  # its place in the workspace, if planned
                    if t is None:
                        t = regs[slot] = (
                            empty(sizes, dtype=dtype, device=device)
                            if st is None
                            else torch.empty_strided(sizes, st, dtype=dtype, device=device)
                        )
                    pointers.append(t.data_ptr())
                launch(pointers, [env[n] for n in names] if names else ())

            alloc = fast_empty_strided(device)
            planned = [
                (slot, tuple(sizes), tuple(contiguous_strides(sizes) if st is None else st), dtype)
                for slot, sizes, dtype, st in fixed
            ]
            return _inline_launch(func, "{launch}", ins, planned, names, {"launch": launch, "alloc": alloc}, step, pointers=True)

        # Row-major strides of a symbolic shape as expressions, evaluated per call like the sizes.
        stride_fns = [size_fn(symbolic_strides(v.type.dims) if st is None else st) for v, st in zip(op.outs, strides)]
        if launch is None:
            self._precompile_job(compiled, op, names)

        alloc = fast_empty_strided(device)

        def generic_step(regs: list, env: dict) -> None:
            buffers = [regs[i] for i in ins]
            for (slot, _, sizes, dtype, _), st in zip(outs, stride_fns):
                if slot not in updated:
                    regs[slot] = alloc(sizes(env), st(env), dtype)
                buffers.append(regs[slot])
            kernel(buffers, [env[n] for n in names])

        # The same as statements of the runner: a call of a Python function per step
        # is most of a symbolic launch's host time.
        objects: dict[str, Any] = {"kernel": kernel, "alloc": alloc}
        code = []
        for j, ((slot, _, sizes, dtype, _), st) in enumerate(zip(outs, stride_fns)):
            if slot in updated:
                continue
            objects.update({f"sizes{j}": sizes, f"strides{j}": st, f"dtype{j}": dtype})
            code.append(f"regs[{slot}] = {{alloc}}({{sizes{j}}}(env), {{strides{j}}}(env), {{dtype{j}}})")
        buffers = ", ".join(f"regs[{i}]" for i in ins + [slot for slot, *_ in outs])
        symbols = ", ".join(f"env[{n!r}]" for n in names)
        code.append(f"{{kernel}}([{buffers}], [{symbols}])")
        return InlineStep(code, objects, generic_step, func.sym_name.data)

    def _library_step(self, op: PrimOp) -> Step:
        if isinstance(op, CONVOLUTION_BACKWARD_OPS):  # one library call, arguments made now
            return convolution_backward_step(op, self._slot, self.device, result_format(op), size_fn)
        operands = [self._slot(v) for v in op.operands]
        result = self._slot(op.results[0])
        onednn = onednn_product(op, self.device)
        if onednn is not None:  # a fresh result: not in the memory plan (_memory_plan)
            self._fresh_products.add(result)
            args = ", ".join(f"regs[{i}]" for i in operands)

            def linear(regs: list, env: dict) -> None:
                regs[result] = onednn(*[regs[i] for i in operands])

            return InlineStep([f"regs[{result}] = {{f}}({args})"], {"f": onednn}, linear, op.name)
        made = op.results[0]
        # A convolution only returned keeps the layout torch gives it, which is eager's.
        as_made = _only_viewed_by_library_calls(made) or (isinstance(op, prim.ConvolutionOp) and _layout_free(made))
        fast = static_library_call(op, result_format(op), as_made, self.device)
        if fast is not None:
            if len(operands) == 1:
                (x,) = operands

                def unary(regs: list, env: dict) -> None:
                    regs[result] = fast(regs[x])

                if isinstance(op, prim.VIEW_OPS) and reinterpret is not None and _static(op.operands[0].type.dims) is not None:
                    cache = ViewCache(fast)

                    def cached(regs: list, env: dict) -> None:
                        regs[result] = cache(regs[x])

                    return InlineStep(*view_step_code(cache, f"regs[{x}]", result), cached, op.name)
                return InlineStep([f"regs[{result}] = {_view_code(op, f'regs[{x}]')}"], {"f": fast}, unary, op.name)

            if isinstance(op, prim.MmOp | prim.BmmOp):
                a, b = operands

                def product(regs: list, env: dict) -> None:
                    out = regs[result]  # its place in the workspace, if planned
                    regs[result] = fast(regs[a], regs[b]) if out is None else fast(regs[a], regs[b], out=out)

                return InlineStep(_into_workspace(result, f"regs[{a}], regs[{b}]"), {"f": fast}, product, op.name)
            if isinstance(op, prim.AddmmOp):
                bias, a, b = operands

                def addmm(regs: list, env: dict) -> None:
                    out = regs[result]
                    args = regs[bias], regs[a], regs[b]
                    regs[result] = fast(*args) if out is None else fast(*args, out=out)

                return InlineStep(_into_workspace(result, f"regs[{bias}], regs[{a}], regs[{b}]"), {"f": fast}, addmm, op.name)

            def call(regs: list, env: dict) -> None:
                regs[result] = fast(*[regs[i] for i in operands])

            args = ", ".join(f"regs[{i}]" for i in operands)
            return InlineStep([f"regs[{result}] = {{f}}({args})"], {"f": fast}, call, op.name)

        # Kernels read library results as contiguous buffers; only views (which feed
        # library calls and the graph's results, never kernels) keep their strides, and
        # a convolution only returned keeps torch's (eager's).
        memory_format = result_format(op)
        returned_convolution = isinstance(op, prim.ConvolutionOp) and _layout_free(op.results[0])
        keep_layout = isinstance(op, prim.VIEW_OPS) or (
            returned_convolution and memory_format == torch.contiguous_format)
        if len(op.results) > 1:  # prim.sort, prim.topk: one register per result
            results = [(self._slot(r), _layout_free(r)) for r in op.results]
            if isinstance(op, FUSED_ATTENTION_OPS):  # its flags read once, here
                kernel = fused_attention_call(op)
                run = lambda args, env: kernel(*args)  # noqa: E731
            else:

                def run(args: list, env: dict) -> Any:
                    with bound_symbols(env):
                        return op.reference(*args)

            if sequence_major(op):  # kernels read each result as [B, S, H, E] in memory

                def multi_step(regs: list, env: dict) -> None:
                    outs = run([regs[i] for i in operands], env)
                    for (r, _), t in zip(results, outs):
                        regs[r] = as_sequence_major(t)

                return multi_step

            def multi_step(regs: list, env: dict) -> None:
                outs = run([regs[i] for i in operands], env)
                for (r, as_made), t in zip(results, outs):
                    regs[r] = t if as_made or t.is_contiguous() else t.contiguous()  # no dispatch if it is

            return multi_step

        symbolic_view = symbolic_view_call(op)
        if symbolic_view is not None:  # a view sized by symbols: its dims read once, here
            (x,) = operands

            def view(regs: list, env: dict) -> None:
                regs[result] = symbolic_view(regs[x], env)

            return InlineStep([f"regs[{result}] = {{view}}(regs[{x}], env)"], {"view": symbolic_view}, view, op.name)

        def step(regs: list, env: dict) -> None:
            with bound_symbols(env):
                out = op.reference(*[regs[i] for i in operands])
            regs[result] = out if keep_layout else out.contiguous(memory_format=memory_format)

        return step

    def _eager_step(self, op: aten.AtenOp) -> Step:
        operands = [self._slot(v) for v in op.operands]
        results = [self._slot(v) for v in op.results]
        layout_free, as_made, wants_copy = eager_result_handling(op)
        # A data-dependent size of its result (unbacked: no argument binds it) is
        # bound from what the kernel made, for the steps after it.
        given = {n for t in self.arg_types if isinstance(t, TensorType) for n in _names(t)}
        unbound = unbound_result_dims(op, given | set(filter(None, self.arg_symbols)))
        copies = [self._kernel_copy_slot(v) if wanted else None for v, wanted in zip(op.results, wants_copy)]

        def step(regs: list, env: dict) -> None:
            args = [regs[i] for i in operands]
            if layout_free:
                args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
            outs = aten.call_eager(op, args, env)
            for r, t, keep, copy in zip(results, outs, as_made, copies):
                if copy is not None:
                    regs[r], regs[copy] = t, t.contiguous()
                else:
                    regs[r] = t.contiguous() if isinstance(t, torch.Tensor) and not keep else t
            for j, k, name in unbound:
                env.setdefault(name, int(outs[j].shape[k]))

        return step

    def _kernel_copy_slot(self, v: SSAValue) -> int:
        """The register of the contiguous copy of v that kernels read (_eager_step)."""
        return self._slots.setdefault(("contiguous", v), len(self._slots))

    def _kernel_input_slot(self, v: SSAValue) -> int:
        copy = self._slots.get(("contiguous", v))
        return self._slot(v) if copy is None else copy

    # ------------------------------------------------------------ results
    def _result_relayouts(self) -> list[tuple[int, Callable[[torch.Tensor, dict], torch.Tensor]]]:
        """(register, the copy into eager's layout when not already in it) for each
        result relayout_results names."""
        return [(self._slot(v), _layout_check(v.type, strides)) for v, strides in relayout_results(self.program, self.results)]

    def _results(self, regs: list, env: dict) -> list[Any]:
        for slot, into_eager_layout in self._relayouts:
            regs[slot] = into_eager_layout(regs[slot], env)
        return [regs[i] for i in self._result_slots]

    # ------------------------------------------------------------ calls
    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if self.specializations is not None:
            graph = self.specializations.find(args)
            if graph is not None:
                return graph(args)
        env: dict[str, int] = dict(self.binding) if self.binding else {}
        regs: list[Any] = [None] * self._registers
        try:
            self._enter(args, regs, env)
        except Exception:
            for bind in self._binders.values():  # the error that names a wrong argument
                bind(args, {})
            raise
        if self._first_call_jobs is not None:
            self._precompile_for(env)
        if self._memory is None:
            self._run(regs, env)
            return self._results(regs, env)
        stream = self._stream()
        if self._shares_workspace():  # the stream's arena, which every graph on it shares
            shared = shared_workspace.acquire(self, self._memory, self.device, stream)
            if shared is not None:
                try:
                    return self._run_in(shared, regs, env)
                finally:
                    shared_workspace.release(self.device, stream)
        # A workspace no other call is using (pop and append are atomic under the GIL).
        free = self._workspaces.setdefault(stream, [])
        workspace = free.pop() if free else self._memory.workspace(self.device)
        try:
            return self._run_in(workspace, regs, env)
        finally:
            free.append(workspace)

    def _run_in(self, workspace: list[tuple[int, torch.Tensor]], regs: list, env: dict) -> list[Any]:
        """The call's steps with its planned values at their places in `workspace`."""
        for slot, t in workspace:
            regs[slot] = t
        self._run(regs, env)
        return self._results(regs, env)

    def _shares_workspace(self) -> bool:
        """A large GPU workspace is the stream's shared arena (runtime/shared_workspace.py);
        not while a CUDA graph is being captured, whose memory must be its own."""
        return (self.device.type == "cuda" and self._memory.size >= SHARED_WORKSPACE_BYTES
                and not torch.cuda.is_current_stream_capturing())


def eager_result_handling(op: aten.AtenOp) -> tuple[bool, list[bool], list[bool]]:
    """How an eager fallback's operands and results are handled: (whether its tensor
    operands are made contiguous first, whether each result stays as eager made it,
    whether each result also needs a contiguous copy for the kernels that read it)."""
    # Tensors have value semantics here: a `clone(memory_format=contiguous)` that
    # AOTAutograd put before a kernel needing contiguous inputs
    # (_embedding_bag_forward_only) is gone, so the eager kernel gets contiguous
    # operands; views of storage (as_strided) keep theirs.
    # A view op (select, slice: its result aliases an operand, which a graph result
    # may be) runs on its operands as they are, so that its result views their memory.
    view = _is_view_op(op.overload_name)
    layout_free = op.overload_name not in ("aten::as_strided",) and not view
    # A result only returned (or handed to library calls) stays as eager made it: a
    # view of an input stays that view, which AOTAutograd rebuilds the graph's
    # aliased output from (a contiguous copy made it read the input at offset 0).
    as_made = [_layout_free(v) for v in op.results]
    # A view that kernels read and the graph also returns (through views): the
    # register keeps the view (AOTAutograd rebuilds the aliased result from it) and
    # the kernels read a contiguous copy of their own (narrow(1, k, 1) of an input,
    # doubled by a kernel and returned permuted, came back reading offset 0).
    copies = [view and not keep and _returned_through_views(v) for v, keep in zip(op.results, as_made)]
    return layout_free, as_made, copies


def relayout_results(program: kd.ProgramOp, results: Sequence[SSAValue]) -> list[tuple[SSAValue, Sequence[Dim]]]:
    """(result, eager's strides) for each result the program may make in another layout
    than eager's (result_strides). A result that shares memory with an argument or
    another result (a view of an input, a value returned twice) stays as made: a copy
    would part what eager's results share. A view of memory only it holds (a flip is a
    permuted view of a kernel's output) is copied like any result."""
    wanted = result_strides(program)
    roots = [_view_root(v) for v in results]
    holders = Counter(roots)  # how many results hold each memory
    relayouts = []
    for v, root, strides in zip(results, roots, wanted):
        if strides is None or isinstance(root, BlockArgument) or holders[root] > 1:
            continue
        if isinstance(v.owner, kd.LaunchOp) and _made_as(v) == tuple(strides):
            continue  # the kernel writes it in eager's layout (fusion's result_layouts)
        relayouts.append((v, strides))
    return relayouts


def symbolic_strides(dims: Sequence[Dim]) -> list[Dim]:
    """The row-major strides of `dims`, as expressions over their symbols (a dim of
    size 0 counts as 1, as torch's contiguous strides count it)."""
    out: list[Dim] = []
    stride: Dim = 1
    for d in reversed(list(dims)):
        out.append(stride)
        stride = sym(stride) * sympy.Max(sym(d), 1)
    return out[::-1]


def symbolic_view_call(op: PrimOp) -> Callable[[torch.Tensor, dict], torch.Tensor] | None:
    """`f(x, env)` doing what a reshape or broadcast_in_dim of symbolic dims does, with
    its dims and broadcast read from the op once (its reference reads them from the
    op's attributes at every call)."""
    if not isinstance(op, prim.ReshapeOp | prim.BroadcastInDimOp):
        return None
    names = tuple(sorted(_names(op.result.type)))
    if isinstance(op, prim.ReshapeOp):
        dims = size_fn(op.result.type.dims)
        return SymbolicViewCache(lambda x, env: x.reshape(dims(env)), names)
    if isinstance(op, prim.BroadcastInDimOp):
        dims = size_fn(op.result.type.dims)
        bd = list(op.broadcast_dimensions.get_values())
        return SymbolicViewCache(lambda x, env: prim.broadcast_in_dim(x, dims(env), bd), names)
    return None


def _inline_launch(func: Kernel, call: str, ins: list[int], planned: list, names: Sequence[str] | None,
                   objects: dict[str, Any], step: Step, pointers: bool = False) -> InlineStep:
    """A static launch as statements: each output's buffer (its place in the workspace,
    or a new tensor), then the kernel on the buffers (raw pointers for compiled CPU
    code) and the symbol values (none where `names` is None: a bound launch)."""
    code = []  # no local names: a local would keep its tensor alive past its last use
    for j, (slot, sizes, strides, dtype) in enumerate(planned):
        objects[f"dtype{j}"] = dtype
        code += [f"if regs[{slot}] is None:", f"    regs[{slot}] = {{alloc}}({sizes!r}, {strides!r}, {{dtype{j}}})"]
    buffers = [f"regs[{i}]" for i in ins + [slot for slot, *_ in planned]]
    if pointers:
        buffers = [f"{b}.data_ptr()" for b in buffers]
    if names is None:  # a launch bound to its symbols' values (_bound_launch): the buffers alone
        symbols = ""
    else:
        symbols = ", [" + ", ".join(f"env[{n!r}]" for n in names) + "]" if names else ", ()"
    code.append(f"{call}([{', '.join(buffers)}]{symbols})")
    return InlineStep(code, objects, step, f"{func.sym_name.data}")


def _view_code(op: PrimOp, x: str) -> str:
    """The expression for a static library call of one operand: a view as the tensor
    method it is, anything else through `{f}`."""
    if isinstance(op, prim.PermuteOp):
        return f"{x}.permute({tuple(prim.ints_of(op.dims))!r})"
    if isinstance(op, prim.ReshapeOp):
        return f"{x}.reshape({tuple(_static(prim.dims_of(op.shape)))!r})"
    return f"{{f}}({x})"


def _into_workspace(result: int, args: str) -> list[str]:
    """A library product written into its place in the workspace if it has one."""
    return [f"regs[{result}] = {{f}}({args}) if regs[{result}] is None else {{f}}({args}, out=regs[{result}])"]


def _names(t: TensorType) -> set[str]:
    return {s.name for d in t.dims if isinstance(d, sympy.Expr) for s in d.free_symbols}


def _tensor_binder(i: int, rank: int, symbols: list[tuple[int, str]]):
    def bind(args: Sequence[Any], env: dict[str, int]) -> None:
        a = args[i]
        if not isinstance(a, torch.Tensor) or a.dim() != rank:
            raise ValueError(f"argument {i}: expected a tensor of rank {rank}, got {_describe(a)}")
        if symbols:
            shape = a.shape
            for k, name in symbols:
                env.setdefault(name, int(shape[k]))

    return bind


def _checked_layout(i: int, rank: int, layout: Callable[[torch.Tensor, dict], torch.Tensor]):
    """`layout` for an argument of static layout whose strides differ, after the
    binder's check (a tensor of another rank must not be copied into this one's shape)."""

    def relayout(a: Any, env: dict) -> torch.Tensor:
        if not isinstance(a, torch.Tensor) or a.dim() != rank:
            raise ValueError(f"argument {i}: expected a tensor of rank {rank}, got {_describe(a)}")
        return layout(a, env)

    return relayout


def _index_binder(i: int, name: str):
    def bind(args: Sequence[Any], env: dict[str, int]) -> None:
        env.setdefault(name, int(args[i]))

    return bind


def _describe(a: Any) -> str:
    if isinstance(a, torch.Tensor):
        return f"a tensor of shape {tuple(a.shape)}"
    return type(a).__name__


def _layout_check(t: TensorType, strides: Sequence[Dim]) -> Callable[[torch.Tensor, dict], torch.Tensor]:
    """x as is if its strides are those the kernels were compiled for (dims of size 1
    aside), else a copy laid out so."""
    sizes_of, strides_of = size_fn(t.dims), size_fn(strides)
    static_sizes, static_strides = _static(t.dims), _static(strides)

    if static_sizes is not None and static_strides is not None:
        exact = tuple(static_strides)

        def check_static(x: torch.Tensor, env: dict) -> torch.Tensor:
            return x if x.stride() == exact else relayout(x, static_sizes, static_strides)

        return check_static

    def check(x: torch.Tensor, env: dict) -> torch.Tensor:
        return relayout(x, sizes_of(env), strides_of(env))

    return check


def _made_as(v: SSAValue) -> tuple | None:
    """The strides a kernel.launch writes its output v with (None: contiguous)."""
    strides = launch_strides(v.owner)[v.owner.results.index(v)]
    return None if strides is None else tuple(strides)


def _returned_through_views(v: SSAValue) -> bool:
    """Whether the graph returns v or a view of it."""
    return any(isinstance(u.operation, kd.ReturnOp)
               or isinstance(u.operation, prim.VIEW_OPS) and _returned_through_views(u.operation.results[0])
               for u in v.uses)


def _is_view_op(qualified_name: str) -> bool:
    """Whether torch's schema says the op's result aliases an operand (select, slice)."""
    try:
        returns = aten.torch_overload(qualified_name)._schema.returns
    except (AttributeError, RuntimeError):
        return False
    return any(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def _view_root(v: SSAValue) -> SSAValue:
    """The value whose memory v views (v itself where it is no view)."""
    while isinstance(v.owner, (*prim.VIEW_OPS, *COMPLEX_VIEW_OPS)):
        v = v.owner.operands[0]
    return v


def _layout_free(v: SSAValue) -> bool:
    """Whether every reader of v takes it with any strides: library calls that hand
    their operands to torch as they are, the graph's results (a library result returned
    as the library made it is what eager returns: torch's meta kernel gave the traced
    strides), and views whose own readers are so. Then v keeps the layout its library
    call gave it (torch's fused attention writes [B, L, H, E] in memory for [B, H, L, E]):
    made contiguous, it would be copied here and copied back where a view or the
    backward graph wants the library's layout."""
    for use in v.uses:
        reader = use.operation
        if isinstance(reader, prim.VIEW_OPS):
            if not _layout_free(reader.results[0]):
                return False
        elif not isinstance(reader, _READS_ANY_STRIDES):
            return False
    return True


_READS_ANY_STRIDES = (kd.ReturnOp, prim.MmOp, prim.BmmOp, prim.AddmmOp, prim.CatOp, ScaledDotProductAttentionOp, *FUSED_ATTENTION_OPS)


def _only_viewed_by_library_calls(v: SSAValue) -> bool:
    """Whether only views of v are read, and only by library calls: then v may keep the
    strides its library call gave it. Kernels read their operands as contiguous
    buffers, and a graph result keeps the layout eager gives it."""
    return bool(v.uses) and all(
        isinstance(use.operation, prim.VIEW_OPS) and _views_read_by_library_calls(use.operation.results[0])
        for use in v.uses
    )


def _views_read_by_library_calls(view: SSAValue) -> bool:
    """Whether no kernel and no graph result reads `view`, or a view of it."""
    for use in view.uses:
        reader = use.operation
        if isinstance(reader, kd.LaunchOp | kd.ReturnOp):
            return False
        if isinstance(reader, prim.VIEW_OPS) and not _views_read_by_library_calls(reader.results[0]):
            return False
    return True
