"""fold-grouped-attention (passes/grouped_attention.py): grouped-query attention of a
few queries reads K and V once per kv head, with the values of the attention over the
repeated heads. Programs are drawn for it (no generic program holds a repeated-head
attention): batch, kv heads, group, queries, keys, head size, the two forms of the
repeat, and no mask, a boolean mask over keys or over queries and keys shared by the
heads, or an additive mask per head."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from strata.dialects.context import parse_module, strata_context
from strata.passes.grouped_attention import FoldGroupedAttentionPass
from strata.testing import profiles  # noqa: F401  (loads the hypothesis profile)
from strata.testing.checks import check_values
from strata.testing.reach import changes


def _t(dims, dtype="f32") -> str:
    return f"!strata.tensor<[{', '.join(str(d) for d in dims)}], {dtype}>"


def _shape(dims) -> str:
    return "[" + ", ".join(f"{d} : i64" for d in dims) + "]"


def _repeat(name: str, b, hkv, g, s, e, inserted: bool) -> list[str]:
    """`name` [b, hkv, s, e] repeated g times per head: %{name}3 [b, hkv·g, s, e]."""
    wide = [b, hkv, g, s, e]
    if inserted:  # reshape to [b, hkv, 1, s, e] first, as repeat_interleave decomposes
        lines = [f"%{name}1 = prim.reshape %{name} {{shape = {_shape([b, hkv, 1, s, e])}}} : ({_t([b, hkv, s, e])}) -> {_t([b, hkv, 1, s, e])}",
                 f"%{name}2 = prim.broadcast_in_dim %{name}1 {{shape = {_shape(wide)}, broadcast_dimensions = array<i64: 0, 1, 2, 3, 4>}} : ({_t([b, hkv, 1, s, e])}) -> {_t(wide)}"]
    else:  # expand over a new dim
        lines = [f"%{name}2 = prim.broadcast_in_dim %{name} {{shape = {_shape(wide)}, broadcast_dimensions = array<i64: 0, 1, 3, 4>}} : ({_t([b, hkv, s, e])}) -> {_t(wide)}"]
    return lines + [f"%{name}3 = prim.reshape %{name}2 {{shape = {_shape([b, hkv * g, s, e])}}} : ({_t(wide)}) -> {_t([b, hkv * g, s, e])}"]


@st.composite
def grouped_attention(draw) -> str:
    b, hkv, g = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(2, 4))
    length, s, e = draw(st.integers(1, 4)), draw(st.integers(1, 9)), draw(st.sampled_from([4, 8]))
    h = hkv * g
    mask = draw(st.sampled_from(["none", "keys", "rows", "per-head"]))
    mdims, mtype = {"keys": ([1, 1, 1, s], "i1"), "rows": ([1, 1, length, s], "i1"), "per-head": ([b, h, length, s], "f32")}.get(mask, (None, None))
    args = [f"%q: {_t([b, h, length, e])}", f"%k: {_t([b, hkv, s, e])}", f"%v: {_t([b, hkv, s, e])}"]
    if mdims:
        args.append(f"%m: {_t(mdims, mtype)}")
    body = _repeat("k", b, hkv, g, s, e, draw(st.booleans())) + _repeat("v", b, hkv, g, s, e, draw(st.booleans()))
    operands = "%q, %k3, %v3" + (", %m" if mdims else "")
    types = ", ".join([_t([b, h, length, e]), _t([b, h, s, e]), _t([b, h, s, e])] + ([_t(mdims, mtype)] if mdims else []))
    out = _t([b, h, length, e])
    body.append(f"%o = prim.sdpa {operands} {{is_causal = false}} : ({types}) -> {out}")
    lines = "\n  ".join(body)
    return f"func.func @graph({', '.join(args)}) -> {out} {{\n  {lines}\n  func.return %o : {out}\n}}"


@given(text=grouped_attention(), seed=st.integers(0, 3))
def test_folded_attention_keeps_values(text, seed):
    before = parse_module(text)
    assert changes(before, FoldGroupedAttentionPass()), f"the pass did not fold:\n{text}"
    after = before.clone()
    FoldGroupedAttentionPass().apply(strata_context(), after)
    problem = check_values(before, after, f"seed={seed}")
    assert problem is None, f"{problem}\n\n{text}"
