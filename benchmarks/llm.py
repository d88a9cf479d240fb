"""LLM workloads, eager vs TorchInductor vs strata in one run: greedy decode against a
static KV cache (with its bandwidth floor), prefill, and a training step.

    python benchmarks/llm.py --device cuda --parts decode,prefill,train --out results/

Decode (gpt-fast's loop): the step `model(token, input_pos)` compiled with
`mode="reduce-overhead", fullgraph=True`, batch 1, bf16; the prompt's prefill compiled
with `dynamic=True`. Each round, each contender prefills the same prompt and decodes
`--tokens` tokens; tokens/s is the median over rounds. The floor is the bytes a step
must read (weights; one row of the embedding) over the copy bandwidth measured here
(`dst.copy_(src)` of 1 GiB, read + written bytes per second): the share of it each
contender reaches is printed. Strata's greedy tokens are compared with eager's: its own
sequence (where it first differs, and eager's top-2 gap there), and fed eager's
tokens step by step, whether its argmax is eager's at every step whose top two logits
are more than two bf16 spacings apart (bf16 logits over a 32,000-token vocabulary tie
often enough that a free-running sequence parts at the first tie).

Prefill: tokens/s over a `--prompt`-token prompt, and the logits' error against eager.

Train: forward, backward and AdamW of the Llama-style model without caches, bf16
autocast, default mode; tokens/s.

Every contender's eager fallbacks are counted from strata's warnings and printed.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_models import CONFIGS, Llama, init_weights, weight_bytes  # noqa: E402
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def copy_bandwidth(device: str) -> float:
    """Bytes read + written per second by a large device-to-device copy."""
    n = (1 << 30) if device == "cuda" else (1 << 26)
    src = torch.empty(n, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(10):
        sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        times.append(time.perf_counter() - t0)
    return 2 * n / min(times)


class Fallbacks:
    """Counts strata's eager-fallback warnings while active."""

    def __init__(self):
        self.messages: list[str] = []

    def __enter__(self):
        self._cm = warnings.catch_warnings(record=True)
        self._log = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self.messages = [str(w.message) for w in self._log if "strata" in str(w.message)]
        for w in self._log:
            if "strata" not in str(w.message):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def compiled(kind: str, model: torch.nn.Module, **kwargs):
    if kind == "eager":
        return model
    if kind == "inductor":
        return torch.compile(model, **kwargs)
    # backend="strata" as strata.compile spells it: it needs no installed entry point
    return strata.compile(model, **kwargs)


class Decoder:
    """One contender's model (own KV cache), prefill and decode step."""

    def __init__(self, kind: str, base: Llama, device: str):
        self.kind = kind
        self.model = copy.deepcopy(base)
        self.model.setup_caches(1)
        self.prefill = compiled(kind, self.model, dynamic=True, fullgraph=True)
        self.step = compiled(kind, self.model, mode="reduce-overhead", fullgraph=True)
        self.device = device

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, n: int, margins: list | None = None) -> tuple[list[int], float, torch.Tensor]:
        """Greedy tokens after the prompt, decode seconds (after the prefill), logits of
        the prompt; `margins` gets each step's gap between the top two logits."""
        t = prompt.shape[1]
        logits = self.prefill(prompt, torch.arange(t, device=self.device))
        token = logits[:, -1].argmax(-1, keepdim=True)
        out = [int(token)]
        # as gpt-fast's loop: the position advances on the device, so no step waits for
        # the host (a fresh `torch.tensor(..., device=)` each step synchronized it)
        pos = torch.tensor([t], device=self.device)
        sync(self.device)
        t0 = time.perf_counter()
        for _ in range(n - 1):
            step_logits = self.step(token.clone(), pos)
            pos += 1
            token = step_logits[:, -1].argmax(-1, keepdim=True)
            if margins is not None:
                top = step_logits[0, -1].float().topk(2).values
                margins.append(float(top[0] - top[1]))
            out.append(token)
        sync(self.device)
        seconds = time.perf_counter() - t0
        return [int(x) for x in out], seconds, logits


    @torch.no_grad()
    def forced(self, prompt: torch.Tensor, tokens: list[int]) -> tuple[list[int], list[float], list[float]]:
        """Teacher forcing: each step fed `tokens` (eager's), not its own pick; each
        step's argmax, its top-2 gap, and the logits' bf16 spacing at the top."""
        t = prompt.shape[1]
        picks, gaps, spacing = [], [], []

        def note(row: torch.Tensor) -> None:
            top = row.float().topk(2)
            picks.append(int(top.indices[0]))
            gaps.append(float(top.values[0] - top.values[1]))
            spacing.append(float(top.values[0].abs()) * torch.finfo(row.dtype).eps)

        note(self.prefill(prompt, torch.arange(t, device=self.device))[0, -1])
        pos = torch.tensor([t], device=self.device)
        for token in tokens[:-1]:
            note(self.step(torch.tensor([[token]], device=self.device), pos)[0, -1])
            pos += 1
        return picks, gaps, spacing


def greedy_agreement(decoders: dict, prompt: torch.Tensor, tokens: list[int]) -> dict:
    """Each contender's argmax against eager's at every step of eager's own sequence
    (teacher forcing, so that one near tie does not derail the rest), counting only
    the steps where eager's two best logits are more than two bf16 spacings apart: a
    closer pair is decided by rounding, not by the compiler."""
    want, gaps, spacing = decoders["eager"].forced(prompt, tokens)
    clear = [g > 2 * s for g, s in zip(gaps, spacing)]
    out = {}
    for kind, d in decoders.items():
        picks = want if kind == "eager" else d.forced(prompt, tokens)[0]
        differ = [i for i, (a, b, c) in enumerate(zip(picks, want, clear)) if c and a != b]
        out[kind] = {"steps": len(want), "clear_steps": sum(clear), "differ_at_clear_steps": differ,
                     "differ_at_near_ties": sum(1 for a, b, c in zip(picks, want, clear) if not c and a != b)}
    return out


def decode_part(base: Llama, args, device: str, floor_tps: float, log) -> dict:
    kinds = args.contenders.split(",")
    prompt = torch.randint(0, base.cfg.vocab, (1, args.prompt), generator=torch.Generator().manual_seed(1)).to(device)
    decoders, fallbacks, first = {}, {}, {}
    for kind in kinds:
        with Fallbacks() as fb:
            d = Decoder(kind, base, device)
            t0 = time.perf_counter()
            for _ in range(2):  # compiles, warm-up and CUDA graph recording
                tokens, _, _ = d.generate(prompt, min(args.tokens, 8))
            first[kind] = time.perf_counter() - t0
        decoders[kind], fallbacks[kind] = d, fb.messages
        log(f"  decode {kind}: ready in {first[kind]:.1f} s, {len(fb.messages)} strata warnings")
        for m in fb.messages[:5]:
            log(f"    {m[:300]}")
    samples = {k: [] for k in kinds}
    sequences = {}
    for _ in range(args.rounds):
        for kind, d in decoders.items():
            tokens, seconds, _ = d.generate(prompt, args.tokens)
            samples[kind].append((args.tokens - 1) / seconds)
            sequences[kind] = tokens
    result = {"tokens_per_s": {k: statistics.median(v) for k, v in samples.items()}, "samples": samples, "floor_tokens_per_s": floor_tps,
              "fallbacks": {k: len(v) for k, v in fallbacks.items()}, "compile_s": first}
    if args.profile:
        for kind in args.profile.split(","):
            log(f"  profile of {kind}'s decode ({args.tokens} tokens):")
            log(profile_table(lambda: decoders[kind].generate(prompt, args.tokens)))
    if "eager" in sequences:
        # Greedy tokens against eager's: where they first differ, how close eager's top
        # two logits were there (a near tie is decided by rounding, not by the compiler).
        margins: list[float] = []
        sequences["eager"] = decoders["eager"].generate(prompt, args.tokens, margins)[0]
        result["tokens_match_eager"] = {k: sequences[k] == sequences["eager"] for k in sequences}
        first = {k: next((i for i, (a, b) in enumerate(zip(sequences[k], sequences["eager"])) if a != b), None) for k in sequences}
        result["first_mismatch"] = first
        result["eager_margin_there"] = {k: (margins[i - 1] if i else None) if i is not None else None for k, i in first.items()}
        result["eager_min_margin"] = min(margins) if margins else None
        result["greedy_agreement"] = greedy_agreement(decoders, prompt, sequences["eager"])
    return result


def profile_table(fn, rows: int = 25) -> str:
    """The GPU kernels `fn` runs, by total time; then by the time each adds to the
    stream (marginal_table)."""
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows, max_name_column_width=70)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    return table + "\n" + marginal_table(trace.get("traceEvents", []), rows)


def marginal_table(events: list[dict], rows: int = 25, idle_us: float = 50.0) -> str:
    """Each kernel's marginal time: from the end of the kernel before it on the stream
    to its own end. A kernel launched with PDL starts (and its profiled duration
    begins) while its predecessor still runs, so durations count the waits; the ends
    do not. A gap of more than `idle_us` (the host between steps) is not counted."""
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and "dur" in e), key=lambda e: e["ts"] + e["dur"])
    added: dict[str, list[float]] = {}
    for before, k in zip(kernels, kernels[1:]):
        step = k["ts"] + k["dur"] - (before["ts"] + before["dur"])
        if step <= idle_us + k["dur"] and k["ts"] >= before["ts"]:  # same step, same stream order
            added.setdefault(k["name"][:60], []).append(step)
    total = sum(sum(v) for v in added.values()) or 1.0
    lines = [f"{'kernel':<60} {'count':>6} {'median µs':>10} {'total µs':>10} {'share':>6}"]
    for name, v in sorted(added.items(), key=lambda kv: -sum(kv[1]))[:rows]:
        lines.append(f"{name:<60} {len(v):>6} {statistics.median(v):>10.2f} {sum(v):>10.1f} {sum(v) / total:>6.1%}")
    return "\n".join(lines)


def prefill_part(base: Llama, args, device: str, log) -> dict:
    kinds = args.contenders.split(",")
    prompt = torch.randint(0, base.cfg.vocab, (1, args.prefill), generator=torch.Generator().manual_seed(2)).to(device)
    pos = torch.arange(args.prefill, device=device)
    fns, outs = {}, {}
    for kind in kinds:
        model = copy.deepcopy(base)
        model.setup_caches(1)
        fn = compiled(kind, model, dynamic=True, fullgraph=True)
        with torch.no_grad(), Fallbacks() as fb:
            outs[kind] = fn(prompt, pos).float()
        log(f"  prefill {kind}: {len(fb.messages)} strata warnings")
        fns[kind] = (lambda f=fn: f(prompt, pos))
    with torch.no_grad():
        seconds = interleaved_medians(fns, rounds=args.rounds, inner=1, sync=lambda: sync(device))
    for kind in args.profile.split(",") if args.profile else []:
        log(f"  profile of {kind}'s prefill:")
        with torch.no_grad():
            log(profile_table(fns[kind]))
    ref = outs.get("eager")
    return {"tokens_per_s": {k: args.prefill / v for k, v in seconds.items()},
            "max_abs_err_vs_eager": {k: float((o - ref).abs().max()) for k, o in outs.items()} if ref is not None else {}}


def train_part(args, device: str, dtype: torch.dtype, log) -> dict:
    kinds = args.contenders.split(",")
    cfg = CONFIGS[args.train_config]
    torch.manual_seed(0)
    base = init_weights(Llama(cfg)).to(device)
    batch, seq = args.train_batch, args.train_seq
    data = torch.randint(0, cfg.vocab, (batch, seq + 1), generator=torch.Generator().manual_seed(3)).to(device)
    steps, losses = {}, {}
    for kind in kinds:
        model = copy.deepcopy(base)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
        fn = compiled(kind, model)

        def step(model=model, opt=opt, fn=fn):
            with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
                logits = fn(data[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), data[:, 1:].flatten())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        with Fallbacks() as fb:
            losses[kind] = [float(step()) for _ in range(3)]
        log(f"  train {kind}: losses {losses[kind]}, {len(fb.messages)} strata warnings")
        steps[kind] = step
    for kind in args.profile.split(",") if args.profile else []:
        log(f"  profile of {kind}'s training step:")
        log(profile_table(steps[kind]))
    seconds = interleaved_medians(steps, rounds=args.rounds, inner=1, sync=lambda: sync(device))
    return {"tokens_per_s": {k: batch * seq / v for k, v in seconds.items()}, "first_losses": losses,
            "config": args.train_config, "batch": batch, "seq": seq}


def ratios(tps: dict[str, float]) -> str:
    parts = [f"{k} {v:,.0f}" for k, v in tps.items()]
    if "strata" in tps and "inductor" in tps:
        parts.append(f"strata/inductor {tps['strata'] / tps['inductor']:.2f}x")
    if "strata" in tps and "eager" in tps:
        parts.append(f"strata/eager {tps['strata'] / tps['eager']:.2f}x")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--config", default="0.85b", choices=sorted(CONFIGS))
    p.add_argument("--train-config", default="0.3b", choices=sorted(CONFIGS))
    p.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    p.add_argument("--parts", default="decode,prefill,train")
    p.add_argument("--contenders", default="eager,inductor,strata")
    p.add_argument("--tokens", type=int, default=128, help="decoded tokens per round")
    p.add_argument("--prompt", type=int, default=32, help="prompt length before decoding")
    p.add_argument("--prefill", type=int, default=512, help="prompt length of the prefill part")
    p.add_argument("--train-batch", type=int, default=8)
    p.add_argument("--train-seq", type=int, default=512)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--profile", default="", help="contenders whose decode, prefill and training step are profiled (kernels by time)")
    p.add_argument("--out", default=None, help="a directory for llm.json")
    args = p.parse_args(argv)
    device, dtype = args.device, DTYPES[args.dtype]
    log = lambda line: print(line, flush=True)  # noqa: E731
    torch.manual_seed(0)
    results: dict = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
                     "config": args.config, "dtype": args.dtype}
    parts = args.parts.split(",")
    if "decode" in parts or "prefill" in parts:
        base = init_weights(Llama(CONFIGS[args.config])).to(device=device, dtype=dtype).eval()
        nbytes = weight_bytes(base)
        bandwidth = copy_bandwidth(device)
        floor = bandwidth / nbytes
        results.update(weight_gb=nbytes / 1e9, copy_bandwidth_gbs=bandwidth / 1e9)
        log(f"{args.config}: {nbytes / 1e9:.2f} GB of weights a token, copy bandwidth {bandwidth / 1e9:,.0f} GB/s: "
            f"floor {floor:,.0f} tokens/s")
        if "decode" in parts:
            r = results["decode"] = decode_part(base, args, device, floor, log)
            log("decode tokens/s: " + ratios(r["tokens_per_s"]))
            log("  share of floor: " + ", ".join(f"{k} {v / floor:.0%}" for k, v in r["tokens_per_s"].items()))
            log(f"  greedy tokens match eager: {r.get('tokens_match_eager')}, first mismatch {r.get('first_mismatch')}, "
                f"eager's top-2 logit gap there {r.get('eager_margin_there')} (smallest gap {r.get('eager_min_margin')}); "
                f"fallbacks {r['fallbacks']}")
            for kind, a in r.get("greedy_agreement", {}).items():
                log(f"  {kind}, fed eager's tokens: argmax differs from eager's at {len(a['differ_at_clear_steps'])} of "
                    f"{a['clear_steps']} steps with a clear top logit {a['differ_at_clear_steps'][:8]}, and at "
                    f"{a['differ_at_near_ties']} of {a['steps'] - a['clear_steps']} near ties")
        if "prefill" in parts:
            r = results["prefill"] = prefill_part(base, args, device, log)
            log("prefill tokens/s: " + ratios(r["tokens_per_s"]) + f"; max |err| vs eager {r['max_abs_err_vs_eager']}")
        del base
    if "train" in parts:
        r = results["train"] = train_part(args, device, dtype, log)
        log("train tokens/s: " + ratios(r["tokens_per_s"]))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "llm.json"), "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
