"""backend="strata" under torch's ahead-of-time compile (`aot_compile`).

torch calls the backend with the Dynamo graph as usual, but wants back a callable it
can serialize (runtime/package_function.py). AOTAutograd's own cache, which torch turns
on for this, stores only Inductor's compiled code; so strata does not go through
AOTAutograd here: it exports the Dynamo graph (torch.export, each dim Dynamo made
dynamic kept dynamic) and packages it as strata.aot.compile_and_package does. Inference
only: a graph that needs gradients raises, naming why.
"""

from __future__ import annotations

from typing import Any

import torch


def in_aot_compile() -> bool:
    """Whether the backend is being called by torch's aot_compile: it turns these two
    AOTAutograd settings on around the call, and nothing else does."""
    from torch._functorch import config

    return bool(getattr(config, "force_non_lazy_backward_lowering", False) and getattr(config, "bundled_autograd_cache", False))


def compile_serializable(gm: torch.fx.GraphModule, example_inputs: list, options: dict[str, Any]):
    """The Dynamo graph packaged (a PackagedFunction: a SerializableCallable)."""
    import torch._guards
    from torch.export import Dim, export

    from strata.frontend.packaging.aot_package import package_bytes
    from strata.runtime.package_function import PackagedFunction

    if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        raise NotImplementedError("strata: aot_compile packages inference graphs; this one needs gradients "
                                  "(compile it under torch.no_grad(), or without aot_compile)")
    args, dynamic = [], []
    # The placeholders' values say which sizes Dynamo made symbolic (the example
    # inputs may be the call's real tensors).
    traced = [n.meta.get("example_value", n.meta.get("val")) for n in gm.graph.nodes if n.op == "placeholder"]
    for x, seen in zip(example_inputs, traced):
        x = seen if isinstance(seen, torch.Tensor | torch.SymInt) else x
        if isinstance(x, torch.Tensor):
            args.append(torch.zeros([_hint(s) for s in x.shape], dtype=x.dtype, device=x.device))
            dynamic.append({k: Dim.DYNAMIC for k, s in enumerate(x.shape) if isinstance(s, torch.SymInt)} or None)
        else:
            args.append(_hint(x) if isinstance(x, torch.SymInt) else x)
            dynamic.append(Dim.DYNAMIC if isinstance(x, torch.SymInt) else None)
    shapes = (tuple(dynamic),) if any(d is not None for d in dynamic) else None
    with torch._guards.tracing(None), torch.no_grad():  # export traces in a fake mode of its own
        ep = export(_Graph(gm), tuple(args), dynamic_shapes=shapes, strict=False)
    return PackagedFunction(package_bytes(ep, dict(options)))


def _hint(s: Any) -> int:
    return int(s.node.hint) if isinstance(s, torch.SymInt) else int(s)


class _Graph(torch.nn.Module):
    """The Dynamo graph as a module taking its inputs positionally (export's form)."""

    def __init__(self, gm: torch.fx.GraphModule):
        super().__init__()
        self.gm = gm

    def forward(self, *args: Any) -> Any:
        return self.gm(*args)
