"""true_divide and divide are div under other names. Dynamo hands AOTAutograd a
true_divide where a model divides by a tensor made of a symbolic float (transformers'
GPT-2 and ALBERT attention under dynamic=True); each overload is traced here with
torch.fx (make_fx would rewrite it to div first), given fake values as AOTAutograd's
graphs have them, and compiled with no eager fallback allowed."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from strata.frontend.compile_graph import compile_graph
from strata.frontend.options import resolve

aten = torch.ops.aten
X = torch.tensor([[7.0, -7.0, 0.5, -0.0], [1e30, 3.0, -2.5, float("inf")]])
Y = torch.tensor([[2.0, 2.0, -0.0, 3.0], [1e-30, -3.0, 0.5, 2.0]])
N = torch.tensor([[7, -7, 5, 0], [9, -9, 4, 1]])

CALLS = {
    "true_divide.Tensor": lambda: (lambda x, y: aten.true_divide.Tensor(x, y), (X, Y)),
    "true_divide.Scalar": lambda: (lambda n: aten.true_divide.Scalar(n, 2), (N,)),
    "divide.Tensor": lambda: (lambda n, y: aten.divide.Tensor(n, y), (N, Y)),
    "divide.Scalar": lambda: (lambda x: aten.divide.Scalar(x, 3.0), (X,)),
    "divide.Tensor_mode": lambda: (lambda x, y: aten.divide.Tensor_mode(x, y, rounding_mode="floor"), (X, Y)),
    "divide.Scalar_mode": lambda: (lambda n: aten.divide.Scalar_mode(n, 2, rounding_mode="trunc"), (N,)),
}


@pytest.mark.parametrize("overload", CALLS)
def test_other_names_of_div_compile_as_div(overload):
    fn, args = CALLS[overload]()
    gm = torch.fx.symbolic_trace(fn)
    mode = FakeTensorMode()
    FakeTensorProp(gm, mode).propagate(*[mode.from_tensor(a) for a in args])
    assert any(str(n.target).startswith(f"aten.{overload.split('.')[0]}.") for n in gm.graph.nodes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback is a failure here
        (got,) = compile_graph(gm, list(args), resolve(None, None))(list(args))
    want = fn(*args)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True)
