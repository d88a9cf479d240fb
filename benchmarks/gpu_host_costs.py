"""The CPU time of one call of each library call a GPT-2 bf16 step makes (sdpa and its
backends, addmm, mm, a view, an allocation): calls enqueued back to back with no sync
between them, so that the host's time per call shows.

    python benchmarks/gpu_host_costs.py     # on the GPU machine
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F


def host_time(f, n: int = 200) -> str:
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        f()
    host = (time.perf_counter() - start) / n
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / n
    return f"host {host * 1e6:7.1f} us, wall {wall * 1e6:7.1f} us"


def main() -> None:
    dev, bf = "cuda", torch.bfloat16
    q, k, v = (torch.randn(8, 12, 512, 64, device=dev, dtype=bf) for _ in range(3))
    x = torch.randn(4096, 768, device=dev, dtype=bf)
    w = torch.randn(768, 2304, device=dev, dtype=bf)
    b = torch.randn(2304, device=dev, dtype=bf)
    aten = torch.ops.aten
    print("sdpa backend torch picks:", torch._fused_sdp_choice(q, k, v, None, 0.0, True, scale=None))
    calls = {
        "F.scaled_dot_product_attention, causal": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "cudnn attention op, causal": lambda: aten._scaled_dot_product_cudnn_attention(q, k, v, None, False, 0.0, True, False),
        "flash attention op, causal": lambda: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, False),
        "efficient attention op, causal": lambda: aten._scaled_dot_product_efficient_attention(q, k, v, None, False, 0.0, True),
        "addmm": lambda: torch.addmm(b, x, w),
        "mm": lambda: torch.mm(x, w),
        "reshape (a view)": lambda: x.reshape(8, 512, 768),
        "empty": lambda: torch.empty(4096, 768, device=dev, dtype=bf),
        "contiguous (no copy)": lambda: x.contiguous(),
    }
    for name, f in calls.items():
        print(f"{name:40s} {host_time(f)}")


if __name__ == "__main__":
    main()
