"""Warm-start time of strata's dynamo_cache: a model compiled in fresh processes (ViT-small is
transformers' ViTModel at ViT-small's sizes here; the suite builds timm's).

    python benchmarks/warm_start.py            # the whole table (runs children)
    python benchmarks/warm_start.py child MODE # one process: MODE = on | off | eager | percall-on | percall-off

BENCH_MODEL=bert|gpt2|vit (default bert), BENCH_DEVICE=cpu|cuda (default cpu),
BENCH_MODES=on,off,eager,percall-on,percall-off (default all), BENCH_RUNS=3.
Each mode gets its own fresh STRATA_CACHE_DIR, shared by its processes.
BENCH_WARMED=1: each process first compiles a tiny function with Dynamo alone and with
strata, as the suite's warm-compile process does (its one-time setup is then not timed).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODEL = os.environ.get("BENCH_MODEL", "bert")
DEVICE = os.environ.get("BENCH_DEVICE", "cpu")


def build():
    import torch
    import transformers

    torch.manual_seed(0)
    if MODEL == "bert":
        model = transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False).eval()
        args = (torch.randint(0, 30522, (2, 64)),)
    elif MODEL == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config()).eval()
        args = (torch.randint(0, 50257, (2, 64)),)
    else:  # vit-small
        cfg = transformers.ViTConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536)
        model = transformers.ViTModel(cfg, add_pooling_layer=False).eval()
        args = (torch.randn(2, 3, 224, 224),)
    return model.to(DEVICE), tuple(a.to(DEVICE) for a in args)


def child(mode: str) -> None:
    import torch

    import strata  # the user's imports are not part of the first call's time; strata's lazy ones are
    from torch._dynamo.utils import counters

    if mode.startswith("percall"):
        def f(x):
            return x + 1

        x = torch.zeros(16, device=DEVICE)
        with torch.no_grad():
            if mode == "percall-inductor":
                g = torch.compile(f)
            else:
                g = strata.compile(f, options={"dynamo_cache": mode == "percall-on"})
            g(x)
            times = []
            for _ in range(2000):
                t = time.perf_counter()
                g(x)
                times.append(time.perf_counter() - t)
            if DEVICE == "cuda":
                torch.cuda.synchronize()
        print(json.dumps({"percall_us": statistics.median(times) * 1e6, "hits": dict(counters["dynamo_cache"])}))
        return
    model, args = build()
    if os.environ.get("BENCH_WARMED"):
        x = torch.randn(8, device=DEVICE)
        torch.compile(lambda t: t * 2, backend="eager")(x)
        strata.compile(lambda t: torch.relu(t) + 1)(x)
    with torch.no_grad():
        start = time.perf_counter()
        if mode == "eager":
            compiled = torch.compile(model, backend="eager")
        else:
            compiled = strata.compile(model, options={"dynamo_cache": mode == "on"})
        compile_s = time.perf_counter() - start
        out = compiled(*args)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        first = time.perf_counter() - start
        out = out.last_hidden_state if hasattr(out, "last_hidden_state") else out
        err = (out - model(*args).last_hidden_state).abs().max().item()
    print(json.dumps({"first_s": first, "compile_s": compile_s, "max_err": err, "graphs": counters["stats"]["unique_graphs"],
                      "dynamo_cache": dict(counters["dynamo_cache"])}))


def main() -> None:
    results = {}
    modes = os.environ.get("BENCH_MODES", "on,off,eager,percall-on,percall-off,percall-inductor").split(",")
    for mode in modes:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, STRATA_CACHE_DIR=d, TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"))
            runs = []
            for _ in range(int(os.environ.get("BENCH_RUNS", "3"))):
                p = subprocess.run([sys.executable, __file__, "child", mode], env=env, capture_output=True, text=True)
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
                if p.returncode or not line:
                    print(p.stderr[-3000:])
                    raise SystemExit(f"{mode}: child failed")
                runs.append(json.loads(line[-1]))
            results[mode] = runs
            print(MODEL, DEVICE, mode, json.dumps(runs), flush=True)
    if os.environ.get("BENCH_OUT"):
        with open(os.environ["BENCH_OUT"], "w") as f:
            json.dump({"model": MODEL, "device": DEVICE, "results": results}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2])
    else:
        main()
