"""Training a small GPT on several processes, eagerly and with strata, in each of
torch.distributed's modes: the harness of tests/test_distributed.py (gloo, CPU) and of
benchmarks/distributed.py.

    results = run_modes(["ddp", "fsdp_block", "tp"], world=2)   # spawns the processes
    results["ddp"].losses["strata"], results["ddp"].collectives, results["ddp"].fallbacks

Each mode trains the same model from the same seed for `steps` steps of AdamW on each
rank's own batches, once eagerly and once with strata, and reports both runs' losses
and final parameters (rank 0's), how many graphs strata compiled, how many collectives
its programs issue, and every strata warning of a graph or collective run eagerly.

The modes:
- `ddp_inner`: DDP(strata.compile(model)); `ddp_outer`: strata.compile(DDP(model))
  (Dynamo's DDPOptimizer splits the graph at bucket boundaries);
- `ddp_compiled_autograd`: strata.compile(DDP(model)) with DDP's Python reducer under
  compiled autograd: the backward graph holds the all_reduces, which strata compiles;
- `fsdp_block` (each block fully_shard-ed and compiled), `fsdp_model` (the whole
  model compiled), `fsdp_mixed` (per block, bf16 parameters and f32 reduction through
  MixedPrecisionPolicy);
- `tp`: each block's MLP split colwise/rowwise over a device mesh (DTensor): the
  forward and backward graphs hold the collectives.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

MODES = ("ddp_inner", "ddp_outer", "ddp_compiled_autograd", "fsdp_block", "fsdp_model", "fsdp_mixed", "tp")
MIXED = {"fsdp_mixed": "fsdp_block"}  # a mode of bf16 parameters, and the same mode in f32
VOCAB = 97


@dataclass
class ModeResult:
    losses: dict[str, list[float]] = field(default_factory=dict)  # "eager", "strata" ("f32": MIXED)
    parameters: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)
    graphs: int = 0  # graphs strata compiled
    collectives: int = 0  # collective steps in strata's programs
    fallbacks: list[str] = field(default_factory=list)  # strata's warnings of eager graphs or ops
    error: str | None = None


def run_modes(modes: list[str], world: int = 2, steps: int = 10, backend: str = "gloo", device: str = "cpu",
              dtype: torch.dtype = torch.float32) -> dict[str, ModeResult]:
    """Each mode's results, from `world` processes spawned here."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "results.pt")
        mp.spawn(_worker, args=(world, _free_port(), list(modes), steps, backend, device, dtype, out), nprocs=world)
        return torch.load(out, weights_only=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, modes: list[str], steps: int, backend: str, device: str,
            dtype: torch.dtype, out: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend, rank=rank, world_size=world)
    if device == "cuda":
        torch.cuda.set_device(rank)
    torch.set_num_threads(1)
    counts = _count_compiles()
    results = {}
    for mode in modes:
        result = ModeResult()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                # a mixed-precision mode is also run eagerly in f32: how far its own rounding
                # takes it is the scale strata's differences are measured against
                runs = ("eager", "strata", "f32") if mode in MIXED else ("eager", "strata")
                for run in runs:
                    counts.update(graphs=0, collectives=0)
                    run_mode = MIXED.get(mode, mode) if run == "f32" else mode
                    losses, params = _train(run_mode, run == "strata", rank, world, steps, device, dtype)
                    result.losses[run], result.parameters[run] = losses, params
                    if run == "strata":
                        result.graphs, result.collectives = counts["graphs"], counts["collectives"]
                    torch._dynamo.reset()
            result.fallbacks = sorted({str(w.message) for w in caught if _is_fallback(str(w.message))})
        except Exception:
            result.error = traceback.format_exc()[-3000:]
        torch._dynamo.reset()
        results[mode] = result
    if rank == 0:
        torch.save(results, out)
    dist.barrier()
    dist.destroy_process_group()


def _is_fallback(message: str) -> bool:
    return message.startswith("strata:") and ("runs eagerly" in message or "_c10d_functional" in message
                                               or "fsdp::" in message)


def _count_compiles() -> dict[str, int]:
    """Counts strata's compiled graphs and the collectives in their programs."""
    from strata.frontend import backend
    from strata.runtime import collectives, compiled_graph

    counts = {"graphs": 0, "collectives": 0}
    compile_graph, step = backend.compile_graph, collectives.communication_step

    def counting_compile(*args, **kwargs):
        counts["graphs"] += 1
        return compile_graph(*args, **kwargs)

    def counting_step(op, slot):
        if type(op).__name__ != "WaitOp":
            counts["collectives"] += 1
        return step(op, slot)

    backend.compile_graph = counting_compile
    compiled_graph.communication_step = counting_step
    return counts


def _model(device: str, dtype: torch.dtype):
    from strata.testing.aot_models import GPT

    torch.manual_seed(0)
    # no bias on q, k, v: a key's bias has no gradient (softmax ignores what it adds to
    # a row), so AdamW would turn rounding noise into whole steps of it
    return GPT(vocab=VOCAB, d=32, heads=4, layers=2, block=32, qkv_bias=False).to(device)


def _batches(rank: int, steps: int, device: str) -> list[torch.Tensor]:
    """Each rank's own batch, the same at every step: the model learns it, so the loss
    falls (random tokens would leave it at log(VOCAB))."""
    g = torch.Generator().manual_seed(100 + rank)
    return [torch.randint(0, VOCAB, (4, 17), generator=g).to(device)] * steps


def _train(mode: str, compiled: bool, rank: int, world: int, steps: int, device: str, dtype: torch.dtype):
    model, backward = _parallel(mode, _model(device, dtype), compiled, world, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for batch in _batches(rank, steps, device):
        with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB).float(), batch[:, 1:].reshape(-1))
        with backward():
            loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, _full_parameters(model)


def _parallel(mode: str, m, compiled: bool, world: int, device: str):
    """The model wrapped for `mode`, and the context the backward runs in."""
    import strata
    from strata.frontend.backend import make_backend
    from torch.nn.parallel import DistributedDataParallel as DDP

    plain = contextlib.nullcontext
    if mode == "ddp_inner":
        return DDP(strata.compile(m) if compiled else m), plain
    if mode == "ddp_outer":
        return (strata.compile(DDP(m)) if compiled else DDP(m)), plain
    if mode == "ddp_compiled_autograd":
        torch._dynamo.config.optimize_ddp = "python_reducer"
        if not compiled:
            return DDP(m), plain

        def backward():
            return torch._dynamo.compiled_autograd._enable(
                lambda gm: torch.compile(gm, backend=make_backend(), fullgraph=True))

        return strata.compile(DDP(m)), backward
    if mode.startswith("fsdp"):
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        from torch.distributed.device_mesh import init_device_mesh

        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
            if mode == "fsdp_mixed" else MixedPrecisionPolicy()
        mesh = init_device_mesh(device, (world,))  # FSDP's default is the GPU where there is one
        for block in m.blocks:
            fully_shard(block, mesh=mesh, mp_policy=policy)
            if compiled and mode != "fsdp_model":
                block.compile(backend=make_backend())
        fully_shard(m, mesh=mesh, mp_policy=policy)
        return (strata.compile(m) if compiled and mode == "fsdp_model" else m), plain
    if mode == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh(device, (world,))
        for block in m.blocks:
            parallelize_module(block, mesh, {"fc": ColwiseParallel(), "out": RowwiseParallel()})
        return (strata.compile(m) if compiled else m), plain
    raise ValueError(f"unknown mode {mode!r}; the modes are {', '.join(MODES)}")


def _full_parameters(model) -> dict[str, torch.Tensor]:
    """Each parameter whole (a sharded DTensor gathered), on the CPU."""
    out = {}
    for name, p in model.named_parameters():
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        out[name.replace("_orig_mod.", "").replace("module.", "")] = full.detach().float().cpu()
    return out

