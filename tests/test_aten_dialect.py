"""The aten dialect: generated from torch's schemas, and able to carry any overload."""

from __future__ import annotations

import pytest
import torch

from strata.dialects import aten, gen_aten
from strata.dialects.context import parse_module


@pytest.mark.skipif(
    not torch.__version__.startswith("2.13."),
    reason="the committed table is generated from torch 2.13, the version CI pins",
)
def test_generated_table_is_fresh():
    assert gen_aten.main(["--check"]) == 0, "run: python -m strata.dialects.gen_aten"


def test_every_core_overload_has_an_op():
    core = {s.split("(")[0] for s in gen_aten.core_schemas()}
    assert core == set(aten.CORE_OPS)
    assert len(core) > 150


def test_core_op_round_trip_and_binding():
    text = """
builtin.module {
  func.func @g(%x: !strata.tensor<[4, "s0"], f32>, %w: !strata.tensor<["s0"], f32>) -> !strata.tensor<[4, "s0"], f32> {
    %y, %m, %r = aten.native_layer_norm.default %x, %w {normalized_shape = ["s0"], eps = 1.0e-05 : f64, segments = array<i64: 1, 1, 0>} : (!strata.tensor<[4, "s0"], f32>, !strata.tensor<["s0"], f32>) -> (!strata.tensor<[4, "s0"], f32>, !strata.tensor<[4, 1], f32>, !strata.tensor<[4, 1], f32>)
    func.return %y : !strata.tensor<[4, "s0"], f32>
  }
}
"""
    module = parse_module(text)
    module.verify()
    op = next(o for o in module.walk() if isinstance(o, aten.AtenOp))
    bound = op.bind()
    assert bound["bias"] is None and bound["weight"] is op.args[1]
    assert op.constant("eps") == 1e-5
    assert str(op.constant("normalized_shape", {"s0": 7})) == "[7]"
    assert parse_module(str(module)).is_structurally_equivalent(module)


def test_non_core_overload_as_call_runs_eagerly():
    from strata.dialects.types import TensorType

    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region

    block = Block(arg_types=[TensorType([3, 4], "f32")])
    op = aten.build("aten::linalg_vector_norm", {"self": block.args[0], "ord": 3.0, "dim": [1]}, [TensorType([3], "f32")])
    assert isinstance(op, aten.CallOp)
    block.add_ops([op, func.ReturnOp(op.outs[0])])
    module = ModuleOp([func.FuncOp("g", ([TensorType([3, 4], "f32")], [TensorType([3], "f32")]), Region(block))])
    module.verify()
    assert parse_module(str(module)).is_structurally_equivalent(module)
    x = torch.randn(3, 4)
    (got,) = aten.call_eager(op, [x], {})
    torch.testing.assert_close(got, torch.linalg.vector_norm(x, 3.0, dim=[1]))
