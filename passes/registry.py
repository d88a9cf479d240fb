"""Every strata pass by name, as strata-opt and xdsl-opt's plugin see them."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _infer_shapes():
    from strata.passes.infer_shapes import InferShapesPass

    return InferShapesPass


def _decompose():
    from strata.passes.decompose import DecomposePass

    return DecomposePass


def _simplify():
    from strata.passes.simplify import SimplifyPass

    return SimplifyPass


def _fuse():
    from strata.passes.fuse import FusePass

    return FusePass


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "infer-shapes": _infer_shapes,
    "decompose": _decompose,
    "simplify": _simplify,
    "fuse": _fuse,
}

# The pipeline a torch.compile call runs, by pass name.
DEFAULT_PIPELINE = ("infer-shapes", "decompose", "simplify", "infer-shapes", "fuse")


def get_universe():
    """xDSL's plugin hook: strata's dialects and passes for the stock xdsl-opt."""
    from xdsl.universe import Universe

    from strata.dialects.context import strata_dialects

    return Universe(
        all_dialects={d.name: (lambda d=d: d) for d in strata_dialects()},
        all_passes=dict(PASSES),
    )
