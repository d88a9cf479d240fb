"""Training speed on several GPUs: eager vs TorchInductor vs strata, in one run.

A GPT-style model (12 layers, d 1024, 16 heads, vocab 50304: 0.2B parameters) trained
in bf16 autocast with AdamW on `--tokens` tokens per GPU per step, in each mode:
- ddp: DDP(compiled model), the collectives in DDP's hooks, which fire once the
  compiled backward has made every gradient (no overlap);
- ddp-optimizer: torch.compile(DDP(model)), which Dynamo's DDPOptimizer splits at DDP's
  bucket boundaries, so each bucket's all-reduce starts when its part of the backward
  is done (the eager contender is DDP(model));
- fsdp: FSDP2, each block fully_shard-ed and compiled, bf16 parameters and f32
  reduction (MixedPrecisionPolicy);
- tp: each block's MLP split colwise/rowwise over the GPUs (DTensor): the collectives
  are in the compiled graphs, which strata schedules (passes/schedule_collectives.py).
- single: the compiled model alone on each GPU, no collectives (what the modes above
  add to it).
For each mode and contender: tokens/s per GPU (median of the timed steps, after warm-up
steps that compile) and peak memory per GPU. NCCL with NVLink multicast off.

    python benchmarks/distributed.py --gpus 2 [--modes ddp,fsdp,tp] [--steps 20] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.nn.functional as F

CONTENDERS = ("eager", "inductor", "strata")


def _model(layers: int, d: int, heads: int, vocab: int, seq: int):
    from strata.testing.aot_models import GPT

    torch.manual_seed(0)
    return GPT(vocab=vocab, d=d, heads=heads, layers=layers, block=seq, qkv_bias=False)


def _compiler(contender: str, strata_options: dict | None = None):
    if contender == "eager":
        return lambda m: m
    if contender == "inductor":
        return lambda m: torch.compile(m)
    from strata.frontend.backend import make_backend

    backend = make_backend(options=strata_options)
    return lambda m: torch.compile(m, backend=backend)


def _strata_options(args, rank: int) -> dict | None:
    """--strata-options, with `{rank}` replaced by the rank (a trace directory each)."""
    return json.loads(args.strata_options.replace("{rank}", str(rank))) if args.strata_options else None


def _setup(mode: str, contender: str, args, rank: int, world: int):
    m = _model(args.layers, args.d, args.heads, args.vocab, args.seq).cuda()
    compile_ = _compiler(contender, _strata_options(args, rank))
    if mode == "single":
        return compile_(m)
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(compile_(m), device_ids=[rank])
    if mode == "ddp-optimizer":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return compile_(DDP(m, device_ids=[rank]))
    if mode == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for i, block in enumerate(m.blocks):
            fully_shard(block, mp_policy=policy)
            m.blocks[i] = compile_(block)
        fully_shard(m, mp_policy=policy)
        return m
    if mode == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh("cuda", (world,))
        for block in m.blocks:
            parallelize_module(block, mesh, {"fc": ColwiseParallel(), "out": RowwiseParallel()})
        return compile_(m)
    raise ValueError(mode)


def _run(mode: str, contender: str, args, rank: int, world: int) -> dict:
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = _setup(mode, contender, args, rank, world)
    # fused AdamW takes no mix of DTensor and plain parameters (TP shards only the MLPs)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=mode != "tp")
    batch = args.tokens // args.seq
    g = torch.Generator(device="cuda").manual_seed(rank if mode != "tp" else 0)  # TP: one batch for the group
    times, losses = [], []
    def step() -> float:
        x = torch.randint(0, args.vocab, (batch, args.seq + 1), device="cuda", generator=g)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, args.vocab), x[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for i in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
        losses.append(loss.item())
    step_s = statistics.median(times)
    tokens = batch * args.seq
    row = {"tokens_per_s_per_gpu": tokens / step_s, "step_ms": step_s * 1e3,
           "peak_gib": torch.cuda.max_memory_allocated() / 2**30, "losses": losses}
    if args.profile:
        row.update(_overlap(step, args.kernels if rank == 0 else 0, f"{mode} {contender}"))
    if contender in args.host_profile.split(","):  # every rank steps: the collectives need all
        _host_profile(step, f"{mode} {contender}", rank == 0)
    return row


def _host_profile(step, title: str, show: bool, steps: int = 5) -> None:
    """The Python functions that took the host's time over a few steps (cProfile),
    printed where `show`."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    torch.cuda.synchronize()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    host = (time.perf_counter() - start) / steps
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / steps
    if not show:
        return
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    print(f"host profile of {title}: {host * 1e3:.1f} ms of host a step, {wall * 1e3:.1f} ms of wall\n{out.getvalue()}", flush=True)


def _overlap(step, top: int = 0, title: str = "") -> dict:
    """One profiled step: the GPU time of communication kernels (NCCL's) and the share
    of it during which a compute kernel ran on another stream; with `top`, the step's
    GPU busy time and its `top` costliest kernels are printed."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA" and e.time_range.elapsed_us() > 0]
    comm = [(e.time_range.start, e.time_range.end) for e in kernels if "nccl" in e.name.lower()]
    compute = sorted((e.time_range.start, e.time_range.end) for e in kernels if "nccl" not in e.name.lower())
    merged: list[list[float]] = []
    for a, b in compute:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    total = sum(b - a for a, b in comm)
    hidden = sum(max(0.0, min(b, d) - max(a, c)) for a, b in comm for c, d in merged)
    if top:
        _kernel_table([e for e in kernels if "nccl" not in e.name.lower()], merged, top, title)
    return {"comm_ms": total / 1e3, "comm_hidden_share": hidden / total if total else 0.0}


def _kernel_table(compute, merged, top: int, title: str) -> None:
    """The step's compute kernels: how many, their busy time (union of intervals), and
    the `top` costliest names with count and total microseconds."""
    by: dict[str, list[float]] = {}
    for e in compute:
        entry = by.setdefault(e.name[:90], [0, 0.0])
        entry[0] += 1
        entry[1] += e.time_range.elapsed_us()
    sequence = os.environ.get("STRATA_BENCH_KERNEL_SEQUENCE")
    if sequence:  # every compute kernel of the step in launch order, to match against a trace
        with open(sequence.replace("{title}", title.replace(" ", "-")), "w") as f:
            json.dump([(e.name[:60], e.time_range.elapsed_us()) for e in sorted(compute, key=lambda e: e.time_range.start)], f)
    busy = sum(b - a for a, b in merged)
    span = merged[-1][1] - merged[0][0] if merged else 0.0
    print(f"kernels of {title}: {len(compute)} launches, busy {busy / 1e3:.1f} ms of a {span / 1e3:.1f} ms span", flush=True)
    for name, (count, us) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {us / 1e3:8.2f} ms {count:5d}x  {name}", flush=True)


def _worker(rank: int, world: int, port: int, args) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    rows = []
    for mode in args.modes.split(","):
        for contender in args.contenders.split(","):
            try:
                row = {"mode": mode, "contender": contender, **_run(mode, contender, args, rank, world)}
            except Exception as e:  # a failing contender is a row, not the end of the run
                row = {"mode": mode, "contender": contender, "error": f"{type(e).__name__}: {str(e)[:300]}"}
            torch._dynamo.reset()
            dist.barrier()
            if rank == 0:
                print(json.dumps({k: v for k, v in row.items() if k != "losses"}), flush=True)
            rows.append(row)
    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
        _table(rows)
    dist.destroy_process_group()


def _table(rows: list[dict]) -> None:
    print("| mode | contender | tokens/s/GPU | vs eager | vs inductor | peak GiB | step ms | comm ms | comm hidden |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    by = {(r["mode"], r["contender"]): r for r in rows}
    for r in rows:
        if "error" in r:
            print(f"| {r['mode']} | {r['contender']} | failed: {r['error'][:80]} | | | | | | |")
            continue
        eager, inductor = by.get((r["mode"], "eager"), {}), by.get((r["mode"], "inductor"), {})

        def ratio(other):
            return f"{r['tokens_per_s_per_gpu'] / other['tokens_per_s_per_gpu']:.2f}x" if "tokens_per_s_per_gpu" in other else ""

        comm = f"{r['comm_ms']:.1f} | {r['comm_hidden_share']:.0%}" if "comm_ms" in r else " | "
        print(f"| {r['mode']} | {r['contender']} | {r['tokens_per_s_per_gpu']:,.0f} | {ratio(eager)} | {ratio(inductor)} "
              f"| {r['peak_gib']:.1f} | {r['step_ms']:.1f} | {comm} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    parser.add_argument("--modes", default="ddp,fsdp,tp")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--d", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--tokens", type=int, default=8192, help="tokens per GPU per step")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--out", default=None)
    parser.add_argument("--profile", action="store_true", help="profile one step: communication time and the share compute hides")
    parser.add_argument("--kernels", type=int, default=0, help="with --profile: print the step's N costliest kernels (rank 0)")
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--strata-options", default="", help="strata's options as JSON, `{rank}` is replaced by the rank")
    parser.add_argument("--host-profile", default="", help="contenders whose host time (cProfile, rank 0) is printed")
    args = parser.parse_args()
    unknown = set(args.contenders.split(",")) - set(CONTENDERS)
    if unknown:
        sys.exit(f"unknown contenders {sorted(unknown)}: choose from {', '.join(CONTENDERS)}")
    if args.gpus < 2:
        sys.exit("benchmarks/distributed.py needs 2 or more GPUs")
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_worker, args=(args.gpus, port, args), nprocs=args.gpus)


if __name__ == "__main__":
    main()
