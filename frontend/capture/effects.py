"""Side effects in an ATen graph. AOTAutograd threads an effect token through each
op with effects: `with_effects(token, op, *args)` returns the new token and the op's
results, and the graph returns the last token. linalg.inv, solve, cholesky and
lu_factor end in one such op, aten._linalg_check_errors (eager raises where a matrix
is singular or not positive-definite): it becomes prim.linalg_check_errors, which
raises as eager does and passes the token on. Other effects run the graph eagerly."""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
from xdsl.builder import Builder
from xdsl.dialects.builtin import StringAttr

from strata.dialects.prim_linalg_solve import LinalgCheckErrorsOp


def import_effect(builder: Builder, env: dict[torch.fx.Node, Any], n: torch.fx.Node, source: str) -> None:
    """env[n] = [the new token, None] for `with_effects(token, _linalg_check_errors, ...)`."""
    from strata.frontend.capture.importer import UnsupportedGraph

    token, inner, *args = n.args
    check = torch.ops.aten._linalg_check_errors.default
    if inner is not check:
        raise UnsupportedGraph(f"an op with side effects, {inner}")
    kwargs = dict(n.kwargs)
    bound = dict(zip(["info", "api_name"], args)) | kwargs
    info, api_name, is_matrix = bound.get("info"), bound.get("api_name"), bound.get("is_matrix")
    if token not in env or info not in env or not isinstance(api_name, str) or not isinstance(is_matrix, bool):
        raise UnsupportedGraph(f"with_effects({inner}) with arguments {args}, {kwargs}")
    op = LinalgCheckErrorsOp(env[token], env[info], api_name, is_matrix)
    op.attributes["strata.source"] = StringAttr(source)
    builder.insert(op)
    env[n] = [op.result, None]


def token_positions(placeholders: list[torch.fx.Node]) -> list[int]:
    """The graph inputs that are effect tokens: AOTAutograd passes None for them."""
    with_effects = torch.ops.higher_order.with_effects
    return [
        i for i, n in enumerate(placeholders)
        if n.users and all(u.target is with_effects and u.args[0] is n for u in n.users)
    ]


def with_tokens(call, positions: list[int]):
    """The call with an empty tensor where AOTAutograd passes None for a token (the
    graph's token argument is a [0] tensor; nothing reads it)."""
    if not positions:
        return call

    def tokens_filled(args: list) -> list:
        args = list(args)
        for i in positions:
            if args[i] is None:
                args[i] = torch.empty(0)
        return call(args)

    return tokens_filled
