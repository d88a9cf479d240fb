"""Random straight-line Python functions over tensors and Python numbers, as a user
writes them for torch.compile: the programs of the differential fuzzer.

    from hypothesis import given
    from strata.testing.python_programs import python_programs, random_program
    from strata.testing.differential import run_program

    @given(python_programs())
    def test_compiled_matches_eager(program):
        assert not run_program(program).mismatches

    program = random_program("0:17")   # the same generator from a seeded random source

A program (testing/python_program.py) has 2 to 6 statements over
- tensor parameters of rank 0 to 4 with sizes 0 to 6, float32, int64, bool or float64,
  laid out contiguous, transposed, strided (a step and an offset), expanded (stride 0)
  or channels_last (testing/fuzz_inputs.py); all shapes of a program broadcast
  together, and between calls the sizes stay or change (a change makes them dynamic);
- int parameters: two distinct small ints in the first calls (so that automatic dynamic
  makes them dynamic), then anything: negative, 0, 1, 2**31 + 5; and float parameters;
- tensor ops (arithmetic, math, clamp, where, comparisons, casts, reductions over dims,
  views and reshapes, permute, narrow, roll, flip, cat, expand, unsqueeze), indexing by
  an int (`x[k]`, `torch.arange(12.)[k]`) and by index tensors (`x[idx]`, gather,
  index_select, embedding, take) whose values are in range in the first call and out
  of range (below -size, or past the end) in a later one 60% of the time;
- int arithmetic (abs, //, %, max, min, -, +, *, sizes) and `.item()` of a reduction,
  whose result feeds further arithmetic and tensor ops.

Every statement is run by torch, on each call's values, before it is added: one that
torch refuses on every call is not added, and one that raises on some calls only is
kept where raising is what the op is tested for (indexing, narrow, arange); there
eager's exception is the expected result of that call. So the generator never guesses
torch's shape, promotion or indexing rules, and it knows each call's int values, which
it records as the program's `features` ("neg_int:abs": a dynamic int that is negative
in some call reaches abs); tests/test_python_fuzz.py measures how often each appears.
"""

from __future__ import annotations

import builtins
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from hypothesis import strategies as st

from strata.testing.fuzz_choices import Choices, DrawnChoices, RandomChoices
from strata.testing.fuzz_inputs import LAYOUT_RANKS, literal
from strata.testing.python_program import NAMESPACE, PythonProgram, names_in

MAX_ELEMENTS = 4096  # a bigger intermediate is refused: programs stay cheap to run
MAX_INT = 2**62  # an int past this would overflow int64 in some call
BIG = 2**31 + 5  # past int32: the size of an index type that is too small shows

FIRST_INTS = (2, 3, 4, 5, 7)  # the first two calls: distinct, and not the 0 or 1 Dynamo specializes
LATER_INTS = (-3, 2, -1, 3, 0, -7, 1, 5, -2, 4, BIG, -BIG)
FIRST_FLOATS = (0.5, 1.5, 2.0, 2.5)
LATER_FLOATS = (-1.5, 0.5, 0.0, 3.25, -2.0, 1e6)
FIRST_SIZES = (3, 2, 4, 5, 3, 2, 1, 0)
LATER_SIZES = (4, 2, 3, 5, 1, 0, 6)

DTYPES = (torch.float32, torch.float32, torch.float32, torch.int64, torch.int64, torch.bool, torch.float64)
LAYOUTS = ("contiguous", "contiguous", "contiguous", "transposed", "strided", "expanded", "channels_last")
MODES = {"auto": None, "dynamic": True, "static": False}

_DEAD = object()  # the value of a call that raised at an earlier statement
_GLOBALS = {**NAMESPACE, "__builtins__": builtins}


@dataclass
class _Value:
    name: str
    kind: str  # "tensor", "int" or "float"
    values: list[Any]  # per call; _DEAD where the call raised before
    from_item: bool = False  # computed from a tensor's .item()


@dataclass
class _Candidate:
    """A statement about to be tried, with the parameters it introduces."""

    expression: str
    params: list[tuple[_Value, list[str]]] = field(default_factory=list)  # (value, argument text per call)
    may_raise: bool = False  # kept when it raises on some calls (not all)
    features: set[str] = field(default_factory=set)


def build_program(choices: Choices) -> PythonProgram:
    """A program drawn from `choices` (testing/fuzz_choices.py)."""
    return _Builder(choices).build()


@st.composite
def python_programs(draw) -> PythonProgram:
    """Hypothesis strategy: programs that shrink toward fewer, simpler statements."""
    return build_program(DrawnChoices(draw))


def random_program(seed: int | str) -> PythonProgram:
    """The program of a seeded random source: the fuzzer CLI's program i of seed S is
    random_program(f"{S}:{i}")."""
    return build_program(RandomChoices(seed))


class _Builder:
    def __init__(self, choices: Choices):
        self.c = choices
        self.mode = choices.pick(("auto", "dynamic", "auto", "static", "auto", "dynamic"))
        self.capture = choices.chance(60)
        self.calls = choices.pick((3, 2, 4))
        self.features: set[str] = {f"mode:{self.mode}", f"calls:{self.calls}"}
        self.sizes = self._sizes()
        self.values: dict[str, _Value] = {}
        self.params: list[tuple[_Value, list[str]]] = []
        self.statements: list[tuple[str, str]] = []
        self.consumed: set[str] = set()
        self.alive = [True] * self.calls
        self.remaining = 0
        self.prefer: _Value | None = None  # the int operand the statement being drawn takes
        # The parameters and features of the statement being drawn.
        self.pending: list[tuple[_Value, list[str]]] = []
        self.pending_features: set[str] = set()

    # The program.

    def build(self) -> PythonProgram:
        steps = self.c.integer(2, 6)
        for step in range(steps):
            self.remaining = steps - 1 - step  # statements still to come
            newest = self.values[self.statements[-1][0]] if self.statements else None
            if newest is not None and newest.kind == "int":
                # An int just computed goes on into int arithmetic or a tensor op.
                families, self.prefer = self.INT_CONSUMERS, newest
            else:
                families, self.prefer = (self.TENSOR_FAMILIES if step == steps - 1 else self.FAMILIES), None
            for _ in range(12):
                self.pending, self.pending_features = [], set()
                if self._add(self.c.pick(families)(self)):
                    break
        if not any(v.kind == "tensor" for v in self._results()):
            self.pending, self.pending_features = [], set()
            self._add(self._candidate(f"{self._tensor()} + 1"))  # valid for every dtype and shape
        self.pending = []
        if any(self._uses_item()) and self.capture:
            self.features.add("unbacked")
        elif any(self._uses_item()):
            self.features.add("item_graph_break")
        if not all(self.alive):
            self.features.add("eager_raises")
        leaves = [v.name for v in self._results() if v.name not in self.consumed]
        return PythonProgram(
            params=tuple(v.name for v, _ in self.params),
            statements=tuple(self.statements),
            returns=tuple(leaves),  # all of them: a statement that raises in some call stays
            calls=tuple(tuple(texts[c] for _, texts in self.params) for c in range(self.calls)),
            dynamic=MODES[self.mode],
            capture_scalar_outputs=self.capture and any(self._uses_item()),
            features=frozenset(self.features),
        )

    def _results(self) -> list[_Value]:
        return [self.values[name] for name, _ in self.statements]

    def _uses_item(self):
        return (".item()" in expr for _, expr in self.statements)

    def _add(self, candidate: _Candidate | None) -> bool:
        """Runs the candidate on every live call; adds it if torch accepts it."""
        if candidate is None:
            return False
        results, raised = [], []
        for c in range(self.calls):
            if not self.alive[c]:
                results.append(_DEAD)
                continue
            env = {v.name: v.values[c] for v in self.values.values()}
            env.update({v.name: v.values[c] for v, _ in candidate.params})
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    results.append(eval(candidate.expression, _GLOBALS, env))
            except Exception:
                results.append(_DEAD)
                raised.append(c)
        live = [r for r in results if r is not _DEAD]
        if not live or not self._acceptable(live):
            return False
        # An op that raises on some calls is kept where raising is its test: always for
        # an index made out of range, else near the end of the program or at times
        # (later statements are dead code on the calls it ends).
        wanted = any(f.startswith(("oob_index:", "neg_oob_index:")) for f in candidate.features)
        if raised and not (candidate.may_raise and (wanted or self.remaining <= 1 or self.c.chance(40))):
            return False
        kind = _kind(live[0])
        value = self._fresh_value(kind)
        value.values = results
        value.from_item = ".item()" in candidate.expression or any(
            self.values[n].from_item for n in names_in(candidate.expression) if n in self.values
        )
        for c in raised:
            self.alive[c] = False
        for param, texts in candidate.params:
            self.values[param.name] = param
            self.params.append((param, texts))
        self.consumed |= names_in(candidate.expression)
        self.values[value.name] = value
        self.statements.append((value.name, candidate.expression))
        self.features |= candidate.features
        return True

    @staticmethod
    def _acceptable(live: list[Any]) -> bool:
        kinds = {_kind(r) for r in live}
        if len(kinds) != 1 or None in kinds:
            return False
        for r in live:
            if isinstance(r, torch.Tensor) and r.numel() > MAX_ELEMENTS:
                return False
            if isinstance(r, int) and abs(r) > MAX_INT:
                return False
        return True

    def _fresh_value(self, kind: str, param: bool = False) -> _Value:
        prefix = {"tensor": "x", "int": "k", "float": "f", "index": "idx"}[kind] if param else "v"
        taken = {*self.values, *(v.name for v, _ in self.pending)}
        n = 0
        while f"{prefix}{n}" in taken:
            n += 1
        return _Value(f"{prefix}{n}", "tensor" if kind == "index" else kind, [])

    # Operands: a value of the program (the most recent first) or a new parameter.

    def _available(self, kind: str, rank: range | None, integral: bool) -> list[_Value]:
        found = [v for v, _ in reversed(self.pending) if v.kind == kind]
        found += [v for v in reversed(self.values.values()) if v.kind == kind]
        live = lambda v: [x for x in v.values if x is not _DEAD]  # noqa: E731
        if rank is not None:
            found = [v for v in found if all(_rank(x) in rank for x in live(v))]
        if integral:
            found = [v for v in found if all(not x.is_floating_point() for x in live(v))]
        return found

    def _operand(self, kind: str, rank: range | None = None, new: int = 25, integral: bool = False) -> _Value:
        """A value of `kind` (a tensor of a rank in `rank`, of an int or bool dtype if
        `integral`): the newest half the time (so statements chain), or an older one,
        or, `new` times in 100 or when there is none, a new parameter."""
        if self.prefer is not None and self.prefer.kind == kind:
            return self.prefer
        found = self._available(kind, rank, integral)
        if found and not self.c.chance(new):
            return found[0] if self.c.chance(50) else self.c.pick(found)
        if kind == "tensor":
            return self._tensor_param(rank, torch.int64 if integral else None)
        if kind == "int":
            return self._number_param("int", FIRST_INTS, LATER_INTS)
        return self._number_param("float", FIRST_FLOATS, LATER_FLOATS)

    def _tensor(self, rank: range | None = None) -> str:
        return self._operand("tensor", rank).name

    def _int(self) -> _Value:
        return self._operand("int", new=35)

    def _other_int(self, k: _Value) -> _Value:
        self.prefer = None  # the preferred int is k already
        return self._int()

    def _scalar(self) -> str:
        """An int or float value of the program, or a literal."""
        form = "int" if self.prefer is not None else self.c.pick(("literal", "int", "float", "int"))
        if form == "literal":
            return self.c.pick(("2", "-1", "0.5", "0"))
        value = self._operand(form, new=35)
        self._tag_int_use(value, "tensor_arith")
        return value.name

    def _tensor_param(self, rank: range | None, dtype: torch.dtype | None = None) -> _Value:
        layout = self.c.pick(LAYOUTS)
        ranks = [r for r in (2, 1, 3, 0, 4) if r in LAYOUT_RANKS[layout] and (rank is None or r in rank)]
        if not ranks:
            layout, ranks = "contiguous", [r for r in (2, 1, 3, 0, 4) if rank is None or r in rank]
        r = self.c.pick(ranks)
        dtype = dtype or self.c.pick(DTYPES)
        # Right-aligned on the program's 4 sizes, some dims 1: all inputs broadcast together.
        dims = [None if self.c.chance(15) else 4 - r + j for j in range(r)]
        value = self._fresh_value("tensor", param=True)
        seed = 10 * len(self.params) + 10 * len(self.pending)
        texts = []
        for c in range(self.calls):
            shape = tuple(1 if d is None else self.sizes[c][d] for d in dims)
            where = "" if layout == "contiguous" else f', "{layout}"'
            texts.append(f"tensor({shape}, {dtype}{where}, seed={seed + c})")
        value.values = [eval(t, _GLOBALS) for t in texts]
        self.pending.append((value, texts))
        self.pending_features |= {f"layout:{layout}", f"dtype:{str(dtype).removeprefix('torch.')}"}
        return value

    def _number_param(self, kind: str, first: tuple, later: tuple) -> _Value:
        """Mostly two distinct values of `first` in the first two calls (Dynamo makes a
        number that changed dynamic), then any of `later`."""
        values = [self.c.pick(first if self.c.chance(80) else later)]
        if self.calls > 2:
            values.append(self.c.pick([v for v in first if v != values[0]]))
        while len(values) < self.calls:
            values.append(self.c.pick(later))
        value = self._fresh_value(kind, param=True)
        value.values = values
        self.pending.append((value, [repr(v) for v in values]))
        return value

    def _sizes(self) -> list[list[int]]:
        first = [self.c.pick(FIRST_SIZES) for _ in range(4)]
        change = self.c.chance(50)
        sizes = [first]
        for _ in range(1, self.calls):
            sizes.append([self.c.pick(LATER_SIZES) for _ in range(4)] if change else first)
        if change and any(s != first for s in sizes):
            self.features.add("sizes_change")
        return sizes

    def _index_param(self, bounds: list[int], shapes: list[tuple[int, ...]], wraps: bool, op: str) -> tuple[_Value, set[str]]:
        """An int64 index tensor per call: shape shapes[c], values in range of a dim of
        bounds[c] elements (from -bound where negative indices wrap); 60 times in 100,
        one value out of range in some of the calls after the first."""
        value = self._fresh_value("index", param=True)
        generator = torch.Generator().manual_seed(self.c.integer(0, 1000))
        out_of_range = self.c.chance(60)
        texts, tensors, bad = [], [], set()
        for c in range(self.calls):
            n, shape = bounds[c], shapes[c]
            low = -n if wraps else 0
            t = torch.randint(low, max(n, 1), shape, generator=generator) if n > 0 else torch.zeros(shape, dtype=torch.int64)
            if out_of_range and c > 0 and self.alive[c] and t.numel() > 0 and self.c.chance(60):
                wrong = self.c.pick((-n - 1, 100_000_000, -1, n) if not wraps else (-n - 1, 100_000_000, -n - 1, n))
                t.view(-1)[self.c.integer(0, t.numel() - 1)] = wrong
                bad.add("neg_oob_index" if wrong < 0 else "oob_index")
            if n == 0 and t.numel() > 0 and self.alive[c]:
                bad.add("oob_index")
            texts.append(literal(t))
            tensors.append(t)
        value.values = tensors
        self.pending.append((value, texts))
        return value, {f"{b}:{op}" for b in bad} | {f"index:{op}"}

    # Features that depend on the values of a call.

    def _symbolic(self, value: _Value) -> bool:
        """Whether Dynamo traces this int as a symbol (so its value reaches strata)."""
        if value.from_item:
            return self.capture
        if self.mode != "auto":
            return self.mode == "dynamic"
        live = [v for v in value.values if v is not _DEAD]
        return len(set(live)) > 1

    def _tag_int_use(self, value: _Value, op: str) -> None:
        if value.kind != "int":
            return
        live = [v for v, alive in zip(value.values, self.alive) if alive]
        self.pending_features.add(f"int:{op}")
        if any(v < 0 for v in live) and self._symbolic(value):
            self.pending_features.add(f"neg_int:{op}")
            if value.from_item:
                self.pending_features.add(f"neg_item_int:{op}")
        if any(abs(v) >= BIG for v in live) and self._symbolic(value):
            self.pending_features.add(f"big_int:{op}")

    def _candidate(self, expression: str, may_raise: bool = False, features: set[str] = frozenset()) -> _Candidate:
        return _Candidate(expression, list(self.pending), may_raise, set(features) | self.pending_features)

    # Op families: each returns a candidate statement or None (no operands for it).

    def binary(self) -> _Candidate:
        a = self._tensor()
        op = self.c.pick(("*", "+", "-", "/", "max"))
        if self.c.chance(55):
            b = self._tensor()
            expression = f"torch.maximum({a}, {b})" if op == "max" else f"{a} {op} {b}"
        else:
            expression = f"{a} {'*' if op == 'max' else op} {self._scalar()}"
        return self._candidate(expression)

    def unary(self) -> _Candidate | None:
        value = self._operand("tensor")
        a = value.name
        form = self.c.pick(("neg", "abs", "exp", "clamp", "where", "compare", "float", "long"))
        if form == "clamp":
            low = self._scalar()
            expression = f"{a}.clamp(min={low})" if self.c.chance(50) else f"{a}.clamp({low}, {self._scalar()})"
        elif form == "where":
            other = self._tensor() if self.c.chance(40) else self._scalar()
            expression = f"torch.where({a} > 0, {a}, {other})"
        elif form == "compare":
            other = self._tensor() if self.c.chance(40) else self._scalar()
            expression = f"{a} {self.c.pick(('>', '==', '<='))} {other}"
        elif form == "long":
            # float -> int of inf, NaN or a huge value is undefined behaviour: not a test
            if not all(_finite_small(x) for x in value.values if x is not _DEAD):
                return None
            expression = f"{a}.long()"
        else:
            expression = {"neg": f"-{a}", "abs": f"{a}.abs()", "exp": f"{a}.exp()", "float": f"{a}.float()"}[form]
        return self._candidate(expression, features={f"op:{form}"})

    def reduce(self) -> _Candidate:
        a = self._operand("tensor")
        name = self.c.pick(("sum", "amax", "mean"))
        rank = max(_rank(x) for x in a.values if x is not _DEAD) if any(x is not _DEAD for x in a.values) else 0
        if self.c.chance(25):
            return self._candidate(f"{a.name}.{name}()")
        dim = self.c.integer(-max(rank, 1), max(rank, 1) - 1)
        keepdim = ", keepdim=True" if self.c.chance(40) else ""
        return self._candidate(f"{a.name}.{name}({dim}{keepdim})", features={f"op:{name}"})

    def shape(self) -> _Candidate:
        form = self.c.pick(
            ("reshape", "permute", "transpose", "flip", "unsqueeze", "slice", "view", "contiguous", "expand", "cat")
        )
        a = self._operand("tensor", rank=range(1, 5) if form not in ("reshape", "unsqueeze", "contiguous", "view") else None)
        rank = next((_rank(x) for x in a.values if x is not _DEAD), 0)
        n = a.name
        if form == "reshape":
            expression = f"{n}.reshape(-1)" if rank == 0 or self.c.chance(50) else f"{n}.reshape({n}.shape[0], -1)"
        elif form == "view":
            expression = f"{n}.view(-1)"
        elif form == "permute":
            order = list(range(rank))
            for i in range(rank - 1):
                j = self.c.integer(i, rank - 1)
                order[i], order[j] = order[j], order[i]
            expression = f"{n}.permute({', '.join(map(str, order))}{',' if rank == 1 else ''})"
        elif form == "transpose":
            expression = f"{n}.transpose({self.c.integer(0, rank - 1)}, {self.c.integer(-rank, rank - 1)})"
        elif form == "flip":
            expression = f"{n}.flip({self.c.integer(-rank, rank - 1)})"
        elif form == "unsqueeze":
            expression = f"{n}.unsqueeze({self.c.integer(-rank - 1, rank)})"
        elif form == "slice":
            expression = self.c.pick((f"{n}[::2]", f"{n}[1:]", f"{n}[..., 1::2]", f"{n}[:-1]"))
        elif form == "contiguous":
            expression = f"{n}.contiguous()"
        elif form == "expand":
            expression = f"{n}.expand_as({self._tensor()})"
        else:
            expression = f"torch.cat([{n}, {self._tensor()}], {self.c.integer(-rank, rank - 1)})"
        return self._candidate(expression, features={f"op:{form}"})

    def int_indexing(self) -> _Candidate | None:
        """Tensor ops that take an int: roll, narrow, x[k], arange."""
        form = self.c.pick(("roll", "getitem", "arange_getitem", "narrow", "arange_getitem", "roll_dim", "arange"))
        k = self._int()
        if form == "arange":
            if any(abs(v) > 64 for v in k.values if v is not _DEAD):
                return None
            expression = f"torch.arange({k.name})"
        elif form == "arange_getitem":
            expression = f"torch.arange({self.c.pick((12, 5))}.)[{k.name}]"
        else:
            a = self._operand("tensor", rank=range(1, 5))
            rank = next((_rank(x) for x in a.values if x is not _DEAD), 1)
            dim = self.c.integer(-rank, rank - 1)
            expression = {
                "roll": f"{a.name}.roll({k.name})",
                "roll_dim": f"{a.name}.roll({k.name}, {dim})",
                "getitem": f"{a.name}[{k.name}]",
                "narrow": f"{a.name}.narrow({dim}, {k.name}, 1)",
            }[form]
        op = {"roll_dim": "roll", "arange_getitem": "getitem"}.get(form, form)
        self._tag_int_use(k, op)
        return self._candidate(expression, may_raise=form != "roll" and form != "roll_dim", features={f"op:{form}"})

    def tensor_indexing(self) -> _Candidate | None:
        """x[idx], gather, index_select, embedding and take, with an index tensor
        parameter made for the indexed tensor's size in each call."""
        op = self.c.pick(("getitem_tensor", "gather", "index_select", "embedding", "take"))
        a = self._operand("tensor", rank=range(2, 3) if op == "embedding" else range(1, 5))
        live = [x for x in a.values if x is not _DEAD]
        if not live:
            return None
        rank = _rank(live[0])
        dim = self.c.integer(-rank, rank - 1) if op in ("gather", "index_select") else 0
        length = self.c.pick((2, 1, 3, 0))
        two_d = op in ("getitem_tensor", "embedding", "take") and self.c.chance(30)
        bounds, shapes = [], []
        for x in a.values:
            x = live[0] if x is _DEAD else x
            bounds.append(x.numel() if op == "take" else x.shape[dim])
            if op == "gather":
                shape = list(x.shape)
                shape[dim] = length
                shapes.append(tuple(shape))
            else:
                shapes.append((2, length) if two_d else (length,))
        index, features = self._index_param(bounds, shapes, wraps=op in ("getitem_tensor", "take"), op=op)
        i = index.name
        expression = {
            "getitem_tensor": f"{a.name}[{i}]",
            "gather": f"{a.name}.gather({dim}, {i})",
            "index_select": f"{a.name}.index_select({dim}, {i})",
            "embedding": f"torch.nn.functional.embedding({i}, {a.name})",
            "take": f"{a.name}.take({i})",
        }[op]
        return self._candidate(expression, may_raise=True, features=features)

    def int_arith(self) -> _Candidate:
        core = ("abs", "floordiv", "mod", "max", "min")  # where negative ints went wrong
        form = self.c.pick((*core, *core, "neg", "add", "mul", "add_var", "size"))
        if form == "size":
            a = self._operand("tensor", rank=range(1, 5))
            rank = next((_rank(x) for x in a.values if x is not _DEAD), 1)
            return self._candidate(f"{a.name}.shape[{self.c.integer(-rank, rank - 1)}]", features={"op:size"})
        k = self._int()
        self._tag_int_use(k, form)
        expression = {
            "abs": lambda: f"abs({k.name})",
            "floordiv": lambda: f"{k.name} // {self.c.pick((3, 2, 5, -3))}",
            "mod": lambda: f"{k.name} % {self.c.pick((5, 7, 3, -4))}",
            "max": lambda: f"max({k.name}, {self.c.pick((0, 1, -2))})",
            "min": lambda: f"min({k.name}, {self.c.pick((0, 3, -1))})",
            "neg": lambda: f"-{k.name}",
            "add": lambda: f"{k.name} + {self.c.pick((1, 3, -2))}",
            "mul": lambda: f"{k.name} * {self.c.pick((2, 3, -1))}",
            "add_var": lambda: f"{k.name} + {self._other_int(k).name}",
        }[form]()
        return self._candidate(expression)

    def item(self) -> _Candidate:
        # Mostly of an int tensor: an int from .item() reaches the int arithmetic.
        a = self._operand("tensor", integral=self.c.chance(70)).name
        return self._candidate(f"{a}.{self.c.pick(('sum', 'sum', 'amax'))}().item()", features={"item"})

    def float_arith(self) -> _Candidate:
        form = self.c.pick(("scale", "add_int", "float_of_int", "neg"))
        if form == "float_of_int":
            k = self._int()
            self._tag_int_use(k, "float")
            return self._candidate(f"float({k.name})")
        f = self._operand("float", new=50).name
        if form == "add_int":
            k = self._int()
            self._tag_int_use(k, "float")
            return self._candidate(f"{f} + {k.name}")
        return self._candidate(f"{f} * 2.0" if form == "scale" else f"-{f}")

    # How often each family is tried (a family listed twice, twice as often).
    TENSOR_FAMILIES = (
        binary, binary, unary, reduce, shape, shape,
        int_indexing, int_indexing, int_indexing, tensor_indexing, tensor_indexing, tensor_indexing,
    )
    FAMILIES = TENSOR_FAMILIES + (int_arith, int_arith, int_arith, int_arith, item, item, item, float_arith)
    INT_CONSUMERS = (int_arith, int_arith, int_indexing, int_indexing, int_indexing, binary)


def _kind(x: Any) -> str | None:
    if isinstance(x, torch.Tensor):
        return "tensor"
    if isinstance(x, bool):
        return None  # a bool from .item() of a bool tensor: Dynamo's SymBool, not tested here
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float"
    return None


def _rank(x: Any) -> int:
    return x.dim() if isinstance(x, torch.Tensor) else -1


def _finite_small(x: Any) -> bool:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return True
    return bool((x.isfinite() & (x.abs() < 2**62)).all())
