"""Every strata pass by name, as strata-opt and xdsl-opt's plugin see them."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _infer_shapes():
    from strata.passes.infer_shapes import InferShapesPass

    return InferShapesPass


def _recognize_attention():
    from strata.passes.recognize_attention import RecognizeAttentionPass

    return RecognizeAttentionPass


def _decompose():
    from strata.passes.decompose import DecomposePass

    return DecomposePass


def _simplify():
    from strata.passes.simplify import SimplifyPass

    return SimplifyPass


def _fuse():
    from strata.passes.fuse import FusePass

    return FusePass


def _coalesce_dims():
    from strata.passes.coalesce_dims import CoalesceDimsPass

    return CoalesceDimsPass


def _schedule_collectives():
    from strata.passes.schedule_collectives import ScheduleCollectivesPass

    return ScheduleCollectivesPass


def _pow_to_mul():
    from strata.passes.pow_to_mul import PowToMulPass

    return PowToMulPass


def _fold_sign_ops():
    from strata.passes.fold_sign_ops import FoldSignOpsPass

    return FoldSignOpsPass


def _matvec_to_reduction():
    from strata.passes.matvec_to_reduction import MatvecToReductionPass

    return MatvecToReductionPass


def _matmul_to_dot():
    from strata.passes.matmul_to_dot import MatmulToDotPass

    return MatmulToDotPass


def _specialize_symbols():
    from strata.passes.specialize_symbols import SpecializeSymbolsPass

    return SpecializeSymbolsPass


def _fold_grouped_attention():
    from strata.passes.grouped_attention import FoldGroupedAttentionPass

    return FoldGroupedAttentionPass


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "infer-shapes": _infer_shapes,
    "recognize-attention": _recognize_attention,
    "decompose": _decompose,
    "simplify": _simplify,
    "fuse": _fuse,
    "coalesce-dims": _coalesce_dims,
    "schedule-collectives": _schedule_collectives,
    "pow-to-mul": _pow_to_mul,
    "matvec-to-reduction": _matvec_to_reduction,
    "matmul-to-dot": _matmul_to_dot,
    "fold-grouped-attention": _fold_grouped_attention,
    "fold-sign-ops": _fold_sign_ops,
    "specialize-symbols": _specialize_symbols,
}

# The pipeline a torch.compile call runs, by pass name.
# recognize-attention reads the aten ops AOTAutograd traced, so it runs before decompose
# (the option attention_patterns=False takes it out).
# fold-grouped-attention reads K and V once per kv head in a decode step; on a GPU the
# folded rows run as split-key decode attention (runtime/decode_attention.py), since
# cuDNN's attention, one block per (batch, head), had too few blocks for them.
DEFAULT_PIPELINE = ("infer-shapes", "recognize-attention", "decompose", "simplify", "matvec-to-reduction",
                    "fold-grouped-attention", "infer-shapes", "fuse", "coalesce-dims", "schedule-collectives")


# strata's dialects by name; each loads on first use (see dialects/context.py).
DIALECT_NAMES = ("strata", "aten", "prim", "kernel")


def _dialect(name: str):
    def load():
        from strata.dialects.context import strata_dialect

        return strata_dialect(name)

    return load


def _strata_universe():
    """strata's dialects and passes, as xDSL's plugin mechanism wants them.

    `Universe.get_multiverse` loads each `xdsl.universe` entry point and requires a
    `Universe` *instance* there: a function is rejected with a ValueError that breaks
    every run of the stock xdsl-opt. So the entry point names the instance below,
    whose dialects and passes load lazily, like xDSL's own."""
    from xdsl.universe import Universe

    return Universe(
        all_dialects={n: _dialect(n) for n in DIALECT_NAMES},
        all_passes=dict(PASSES),
    )


# The `xdsl.universe` entry point (pyproject.toml: "strata.passes.registry:get_universe").
get_universe = _strata_universe()
