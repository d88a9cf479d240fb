"""strata-opt with one more pass, `break-add`, which replaces each prim.add by one of
mismatched operand types: for tests of the verification after every pass."""

from dataclasses import dataclass

from xdsl.passes import ModulePass

from strata.dialects import prim
from strata.opt import StrataOptMain


@dataclass(frozen=True)
class BreakAdd(ModulePass):
    name = "break-add"

    def apply(self, ctx, op) -> None:
        for add in [o for o in op.walk() if isinstance(o, prim.ELEMENTWISE_OPS["add"])]:
            t = add.args[0].type
            wider = prim.BroadcastInDimOp(add.args[0], [2, *t.dims], range(1, t.rank + 1))
            broken = prim.ELEMENTWISE_OPS["add"].create(
                operands=[wider.result, add.args[1]], result_types=[t], attributes=dict(add.attributes)
            )
            add.parent.insert_ops_before([wider, broken], add)
            add.results[0].replace_all_uses_with(broken.results[0])
            add.detach()
            add.erase()


class WithBreakingPass(StrataOptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        self.register_pass("break-add", lambda: BreakAdd)


if __name__ == "__main__":
    WithBreakingPass().run()
