"""A kernel.func known by its printed text, parsed only when something needs its ops.

The code generators key their disk caches on a kernel.func's text: on a warm compile
every kernel is a cache hit, and all a graph needs of a kernel is that text, its name,
its symbols, its source ops and its buffer count. Parsing each cached kernel.func only
to print it again for its key was most of strata's part of a warm compile (resnet18:
the parse of its 31 kernels and their printing twice, 0.9 of 1.0 s in a profile). So
the caches store each kernel.func's text beside the program (`split`), and a warm
compile hands KernelTexts to the code generators, which parse one (`as_func`) only on a
miss.

A kernel here is a `kernel.FuncOp` or a `KernelText`; both answer `sym_name`,
`symbol_names`, `source_ops`, `num_buffers` and `str()` alike.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr

from strata.dialects import kernel as kd


class KernelText:
    """A kernel.func's text with what a graph asks of it; the op on demand (`func`)."""

    def __init__(self, text: str, name: str, symbol_names: list[str], source_ops: list[str], num_buffers: int,
                 func: kd.FuncOp | None = None):
        self.text = text
        self.name = name
        self.symbol_names = list(symbol_names)
        self.source_ops = list(source_ops)
        self.num_buffers = num_buffers
        self._func = func

    @classmethod
    def of(cls, func: kd.FuncOp) -> KernelText:
        """func's KernelText: func printed on its own, and func itself."""
        return cls(str(func), func.sym_name.data, func.symbol_names, func.source_ops, func.num_buffers, func)

    @property
    def sym_name(self) -> StringAttr:
        return StringAttr(self.name)

    @property
    def func(self) -> kd.FuncOp:
        """The kernel.func itself, parsed from the text on first use."""
        if self._func is None:
            from strata.dialects.context import parse_module

            module = parse_module(f"builtin.module {{\n{self.text}\n}}")
            func = module.body.block.first_op
            if not isinstance(func, kd.FuncOp) or func.sym_name.data != self.name:
                raise ValueError(f"the text of kernel {self.name} does not hold that kernel.func")
            func.detach()
            self._func = func
        return self._func

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<KernelText {self.name}>"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "symbols": self.symbol_names, "sources": self.source_ops,
                "buffers": self.num_buffers}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> KernelText:
        return cls(str(entry["text"]), str(entry["name"]), [str(s) for s in entry["symbols"]],
                   [str(s) for s in entry["sources"]], int(entry["buffers"]))


Kernel = kd.FuncOp | KernelText


def as_func(kernel: Kernel) -> kd.FuncOp:
    """The kernel.func of a kernel (parsing a KernelText's text if it was not yet)."""
    return kernel.func if isinstance(kernel, KernelText) else kernel


def split(module: ModuleOp) -> tuple[str, list[KernelText]]:
    """A kernel-level module as the text of a module of its other ops (the program) and
    a KernelText of each kernel.func, each printed on its own: the text its code
    generator's cache key is made of."""
    others, kernels = [], []
    for op in module.ops:
        if isinstance(op, kd.FuncOp):
            kernels.append(KernelText.of(op))
        else:
            others.append(str(op))
    return "builtin.module {\n" + "\n".join(others) + "\n}", kernels


def program_module(module: ModuleOp) -> ModuleOp:
    """A copy of the module without its kernel.funcs: what split's program text parses to."""
    return ModuleOp([op.clone() for op in module.ops if not isinstance(op, kd.FuncOp)])


def join(program: str | ModuleOp, kernels: list[KernelText]) -> ModuleOp:
    """The whole module again: the program's module (its text, or that text parsed; the
    module is taken over) with every kernel.func parsed into it."""
    from strata.dialects.context import parse_module

    module = parse_module(program) if isinstance(program, str) else program
    block = module.body.block
    first = block.first_op
    for k in kernels:  # before the program, where the printed module has them
        if first is None:
            block.add_op(k.func)
        else:
            block.insert_op_before(k.func, first)
    return module
