"""The OpInfo sweep: PyTorch's operator database compiled op by op and compared with eager.

    python -m strata.tools.opinfo                         # full sweep, CPU, strata
    python -m strata.tools.opinfo --slice                 # the fixed slice `make test` runs
    python -m strata.tools.opinfo --ops add,softmax --dtypes f32,bf16
    python -m strata.tools.opinfo --backend inductor      # the same samples through Inductor
    python -m strata.tools.opinfo --device cuda --out docs/opinfo-cuda

Each (OpInfo, dtype) lands in one bin, from its first few sample inputs:
- pass: every sample matched eager (torch's per-dtype tolerances), no eager fallback;
- fallback: matched, but some op ran through the eager fallback (the report names it);
- wrong: a sample's result differed from eager (the worst outcome). A floating result
  that differs from eager by more than torch's tolerance for its dtype still passes
  when it is at least as close as eager's to the same op run in float64 (eager's
  kernels round intermediates in some reduced-precision paths; being more accurate
  than eager is not wrong);
- error: compiling or running raised;
- unsupported: eager itself raised on the samples (nothing to compare with).
Writes <out>.md and <out>.json.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import traceback
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

DTYPES = {
    "f32": torch.float32,
    "f64": torch.float64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i32": torch.int32,
    "i64": torch.int64,
    "bool": torch.bool,
}
BINS = ("pass", "fallback", "wrong", "error", "unsupported")

# A representative slice for `make test`: elementwise math, comparisons, reductions,
# normalizations, views, matmul, creation, indexing, scans and sorts, pooling.
SLICE = (
    "add sub mul div abs exp log sqrt rsqrt tanh sigmoid sin neg floor remainder "
    "maximum clamp where eq lt logical_and bitwise_and sum mean amax prod var softmax "
    "log_softmax nn.functional.layer_norm nn.functional.gelu nn.functional.relu "
    "reshape permute transpose expand squeeze unsqueeze cat mm bmm addmm full_like "
    "nn.functional.dropout cumsum sort gather index_select scatter_add argmax topk flip "
    "nn.functional.pad.constant nn.functional.embedding nn.functional.max_pool2d"
).split()

FALLBACK_RE = re.compile(r"no lowering covers (\S+)[ ;]")


@dataclass
class Outcome:
    op: str
    dtype: str
    bin: str
    samples: int = 0
    fallbacks: list[str] = field(default_factory=list)
    detail: str = ""


def op_key(info) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


def compile_fn(backend: str):
    if backend == "strata":
        import strata

        return lambda f: strata.compile(f, dynamic=False)
    return lambda f: torch.compile(f, backend=backend, dynamic=False)


def run_one(info, dtype: torch.dtype, device: str, backend: str, max_samples: int) -> Outcome:
    name = op_key(info)
    dname = next(k for k, v in DTYPES.items() if v == dtype)
    try:
        samples = list(info.sample_inputs(device, dtype, requires_grad=False))[:max_samples]
    except Exception as e:
        return Outcome(name, dname, "unsupported", detail=f"no samples: {e}"[:300])
    compile_ = compile_fn(backend)
    fallbacks: set[str] = set()
    compared = 0
    for sample in samples:
        args = (sample.input, *sample.args)
        kwargs = dict(sample.kwargs)
        try:
            want = info.op(*args, **kwargs)
        except Exception as e:
            continue  # eager rejects this sample
        if not _comparable(want):
            continue

        def fn(*a, _op=info.op, _kw=kwargs):
            return _op(*a, **_kw)

        torch._dynamo.reset()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = compile_(fn)(*args)
        except Exception as e:
            return Outcome(name, dname, "error", compared, sorted(fallbacks), _short(e))
        for w in caught:
            m = FALLBACK_RE.search(str(w.message))
            if m:
                fallbacks.add(m.group(1))
            elif "runs eagerly" in str(w.message) or "kernel interpreter" in str(w.message):
                fallbacks.add(str(w.message)[:120])
        try:
            if info.name in UNINITIALIZED:  # only the shape and dtype mean anything
                _assert_same_metadata(got, want)
            else:
                _assert_close(got, want)
        except AssertionError as e:
            if not _as_accurate_as_eager(info, args, kwargs, got, want):
                return Outcome(name, dname, "wrong", compared, sorted(fallbacks), str(e)[:500])
        compared += 1
    if compared == 0:
        return Outcome(name, dname, "unsupported", 0, detail="eager raised on every sample")
    return Outcome(name, dname, "fallback" if fallbacks else "pass", compared, sorted(fallbacks))


# Ops whose results are uninitialized memory: eager and compiled agree on metadata only.
UNINITIALIZED = ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided")


def _assert_same_metadata(got: Any, want: Any) -> None:
    for g, w in zip(_leaves(got), _leaves(want)):
        if not (isinstance(g, torch.Tensor) and g.shape == w.shape and g.dtype == w.dtype):
            raise AssertionError(f"expected a tensor of shape {tuple(w.shape)} and dtype {w.dtype}")


def _comparable(v: Any) -> bool:
    leaves = v if isinstance(v, list | tuple) else [v]
    return all(isinstance(x, torch.Tensor | int | float | bool | None) for x in leaves) and not any(
        isinstance(x, torch.Tensor) and x.is_complex() for x in leaves
    )


def _assert_close(got: Any, want: Any) -> None:
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            raise AssertionError(f"expected {len(want)} results, got {type(got).__name__}")
        for g, w in zip(got, want):
            _assert_close(g, w)
        return
    torch.testing.assert_close(got, want, equal_nan=True, check_stride=False)


def _as_accurate_as_eager(info, args, kwargs, got, want) -> bool:
    """Whether every floating element of `got` is within tolerance of being as close to
    the float64 result as eager's."""
    try:
        ref = info.op(*_to_f64(args), **_to_f64(kwargs))
    except Exception:
        return False
    pairs = list(zip(_leaves(got), _leaves(want), _leaves(ref)))
    if not pairs:
        return False
    for g, w, r in pairs:
        if not (isinstance(g, torch.Tensor) and g.is_floating_point() and isinstance(r, torch.Tensor)):
            return False
        if g.shape != w.shape:
            return False
        rtol, atol = torch.testing._comparison.default_tolerances(w)
        g, w, r = g.double(), w.double(), r.double().reshape(w.shape)
        slack = atol + rtol * r.abs()
        err_g, err_w = (g - r).abs(), (w - r).abs()
        same_nan = g.isnan() == r.isnan()
        ok = (err_g <= err_w + slack) | (g.isnan() & w.isnan()) | (g == w)
        if not bool((ok & same_nan).all()):
            return False
    return True


def _to_f64(v: Any) -> Any:
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.double()
    if isinstance(v, list | tuple):
        return type(v)(_to_f64(x) for x in v)
    if isinstance(v, dict):
        return {k: _to_f64(x) for k, x in v.items()}
    return v


def _leaves(v: Any) -> list:
    return list(v) if isinstance(v, list | tuple) else [v]


def _short(e: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    return text.splitlines()[-1][:300] if text else type(e).__name__


def select(op_names: list[str] | None, use_slice: bool):
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = set(SLICE) if use_slice else (set(op_names) if op_names else None)
    return [o for o in op_db if wanted is None or o.name in wanted or op_key(o) in wanted]


def sweep(infos, dtypes: list[str], device: str, backend: str, max_samples: int, log=print) -> list[Outcome]:
    out = []
    for info in infos:
        supported = info.supported_dtypes(device)
        for d in dtypes:
            if DTYPES[d] not in supported:
                continue
            start = time.perf_counter()
            o = run_one(info, DTYPES[d], device, backend, max_samples)
            out.append(o)
            log(f"{o.op:40} {o.dtype:5} {o.bin:12} {time.perf_counter() - start:5.1f}s {o.detail[:100] or ', '.join(o.fallbacks)[:100]}")
    return out


def report(outcomes: list[Outcome], backend: str, device: str, command: str) -> str:
    counts = Counter(o.bin for o in outcomes)
    total = len(outcomes)
    judged = total - counts["unsupported"]
    lines = [
        f"# OpInfo sweep — {backend} on {device}",
        "",
        f"Command: `{command}`",
        "",
        f"{total} (op, dtype) pairs; {judged} that eager supports on these samples.",
        "",
        "| bin | pairs | share of supported |",
        "| --- | ---: | ---: |",
    ]
    for b in BINS:
        share = f"{100 * counts[b] / judged:.1f}%" if judged and b != "unsupported" else ""
        lines.append(f"| {b} | {counts[b]} | {share} |")
    for b, title in (("wrong", "Wrong results"), ("error", "Errors"), ("fallback", "Passed with an eager fallback")):
        rows = [o for o in outcomes if o.bin == b]
        if not rows:
            continue
        lines += ["", f"## {title}", "", "| op | dtype | reason |", "| --- | --- | --- |"]
        for o in rows:
            reason = o.detail if b != "fallback" else ", ".join(o.fallbacks)
            lines.append(f"| {o.op} | {o.dtype} | {reason.replace('|', '/').replace(chr(10), ' ')[:200]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="strata", help="strata, inductor, aot_eager, …")
    p.add_argument("--device", default="cpu")
    p.add_argument("--ops", default=None, help="comma-separated OpInfo names")
    p.add_argument("--slice", action="store_true", help="the fixed representative slice")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--samples", type=int, default=3, help="sample inputs per (op, dtype)")
    p.add_argument("--out", default=None, help="path prefix for .md and .json")
    a = p.parse_args(argv)
    infos = select(a.ops.split(",") if a.ops else None, a.slice)
    outcomes = sweep(infos, a.dtypes.split(","), a.device, a.backend, a.samples)
    command = "python -m strata.tools.opinfo " + " ".join(argv if argv is not None else __import__("sys").argv[1:])
    text = report(outcomes, a.backend, a.device, command.strip())
    if a.out:
        with open(a.out + ".md", "w") as f:
            f.write(text)
        with open(a.out + ".json", "w") as f:
            json.dump([asdict(o) for o in outcomes], f, indent=1)
    print(text)
    return 1 if any(o.bin == "wrong" for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
