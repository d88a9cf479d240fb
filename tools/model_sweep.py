"""Whole models compiled by strata and compared with eager: small configurations of
transformers' architectures (random weights, nothing downloaded).

    python -m strata.tools.model_sweep                        # every model, inference
    python -m strata.tools.model_sweep --modes infer,train,dynamic --models llama,t5
    python -m strata.tools.model_sweep --device cuda

Modes: `infer` (no_grad, eval), `train` (forward and backward of mean(out²), dropout
off, every parameter's gradient compared), `dynamic` (dynamic=True, four batch and
sequence sizes, one compile). A row passes when its worst error is within
5e-5·max(1, |eager|) (1e-3 for gradients) and no op ran as an eager fallback; the
table gives the errors, the graphs Dynamo compiled and the ops strata ran as eager
fallbacks (from its warnings).
Needs `transformers` (not a dependency of strata: the sweep is skipped without it).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable

import torch

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=512)
VOCAB = 512


def _builders(tf) -> dict[str, Callable[[], torch.nn.Module]]:
    kv = dict(num_key_value_heads=2, max_position_embeddings=128)
    return {
        "bert": lambda: tf.BertModel(tf.BertConfig(**SMALL, max_position_embeddings=128)),
        "roberta": lambda: tf.RobertaModel(tf.RobertaConfig(**SMALL, max_position_embeddings=130)),
        "albert": lambda: tf.AlbertModel(tf.AlbertConfig(embedding_size=32, **SMALL)),
        "electra": lambda: tf.ElectraModel(tf.ElectraConfig(embedding_size=32, **SMALL)),
        "deberta_v2": lambda: tf.DebertaV2Model(tf.DebertaV2Config(**SMALL, max_position_embeddings=128)),
        "distilbert": lambda: tf.DistilBertModel(tf.DistilBertConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=VOCAB)),
        "mpnet": lambda: tf.MPNetModel(tf.MPNetConfig(**SMALL)),
        "gpt2": lambda: tf.GPT2Model(tf.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128)),
        "gpt_neox": lambda: tf.GPTNeoXModel(tf.GPTNeoXConfig(**SMALL, max_position_embeddings=128)),
        "opt": lambda: tf.OPTModel(tf.OPTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                                                vocab_size=VOCAB, word_embed_proj_dim=64, max_position_embeddings=128,
                                                dropout=0.0, attention_dropout=0.0)),
        "bloom": lambda: tf.BloomModel(tf.BloomConfig(hidden_size=64, n_layer=2, n_head=4, vocab_size=VOCAB)),
        "falcon": lambda: tf.FalconModel(tf.FalconConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB)),
        "phi": lambda: tf.PhiModel(tf.PhiConfig(**SMALL, max_position_embeddings=128)),
        "llama": lambda: tf.LlamaModel(tf.LlamaConfig(**SMALL, **kv)),
        "mistral": lambda: tf.MistralModel(tf.MistralConfig(**SMALL, **kv, sliding_window=16)),
        "qwen2": lambda: tf.Qwen2Model(tf.Qwen2Config(**SMALL, **kv)),
        "gemma": lambda: tf.GemmaModel(tf.GemmaConfig(**SMALL, **kv, head_dim=16)),
        "t5_encoder": lambda: tf.T5EncoderModel(tf.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                                                             vocab_size=VOCAB, dropout_rate=0.0)),
        "clip_text": lambda: tf.CLIPTextModel(tf.CLIPTextConfig(**SMALL, max_position_embeddings=64)),
        "vit": lambda: tf.ViTModel(tf.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                intermediate_size=128, image_size=32, patch_size=8)),
        "swin": lambda: tf.SwinModel(tf.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4)),
        "convnext": lambda: tf.ConvNextModel(tf.ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, image_size=32)),
        "resnet": lambda: tf.ResNetModel(tf.ResNetConfig(hidden_sizes=[16, 32], depths=[1, 1], embedding_size=16)),
    }


VISION = {"vit", "swin", "convnext", "resnet"}


def _inputs(name: str, batch: int, length: int, device: str) -> tuple[torch.Tensor, ...]:
    if name in VISION:
        return (torch.randn(batch, 3, 32, 32, device=device),)
    return (torch.randint(0, VOCAB, (batch, length), device=device),)


def _hidden(out) -> torch.Tensor:
    if isinstance(out, (tuple, list)):
        return out[0]
    return getattr(out, "last_hidden_state", out)


def _err(got: torch.Tensor, want: torch.Tensor) -> tuple[float, float]:
    return float((got.float() - want.float()).abs().max()), float(want.float().abs().max())


def check(name: str, build: Callable[[], torch.nn.Module], mode: str, device: str) -> dict:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    graphs_before = counters["stats"]["unique_graphs"]
    torch.manual_seed(0)
    model = build().to(device)
    row = {"model": name, "mode": mode, "err": float("nan"), "grad err": float("nan"), "graphs": 0, "fallbacks": "", "error": ""}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if mode == "train":
                _train(model, name, device, row)
            else:
                _infer(model, name, device, row, dynamic=mode == "dynamic")
        except Exception as e:  # a row of the table, not the end of the sweep
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    row["fallbacks"] = ", ".join(sorted({_fallback_op(str(w.message)) for w in caught if "no lowering covers" in str(w.message)}))
    row["graphs"] = counters["stats"]["unique_graphs"] - graphs_before
    row["seconds"] = time.perf_counter() - start
    scale = max(1.0, row.pop("scale", 1.0))
    grads_ok = mode != "train" or row["grad err"] <= 1e-3
    row["ok"] = not row["error"] and not row["fallbacks"] and row["err"] <= 5e-5 * scale and grads_ok
    return row


def _fallback_op(message: str) -> str:
    """The aten op a fallback warning names (`strata: no lowering covers aten.x (…)…`)."""
    return message.partition("covers ")[2].partition(" ")[0]


def _infer(model, name, device, row, dynamic: bool) -> None:
    import strata

    model.eval()
    compiled = strata.compile(model, dynamic=True if dynamic else None)
    sizes = [(2, 24), (3, 17), (1, 9), (4, 33)] if dynamic else [(2, 24)]
    worst, scale = 0.0, 0.0
    with torch.no_grad():
        for batch, length in sizes:
            x = _inputs(name, batch, length, device)
            err, s = _err(_hidden(compiled(*x)), _hidden(model(*x)))
            worst, scale = max(worst, err), max(scale, s)
    row["err"], row["scale"] = worst, scale


def _train(model, name, device, row) -> None:
    import strata

    model.train()
    for m in model.modules():  # compare without random masks
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    x = _inputs(name, 2, 24, device)
    want = _hidden(model(*x))
    want.square().mean().backward()
    want_grads = [_grad(p).clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    got = _hidden(strata.compile(model)(*x))
    got.square().mean().backward()
    row["err"], row["scale"] = _err(got, want)
    # A parameter no output reaches (a pooler) gets no gradient from eager and zeros
    # from a compiled graph, which returns all of its outputs: both count as zeros.
    row["grad err"] = max((_err(_grad(p), w)[0] for p, w in zip(model.parameters(), want_grads)), default=0.0)


def _grad(p: torch.nn.Parameter) -> torch.Tensor:
    return p.grad if p.grad is not None else torch.zeros_like(p)


def table(rows: list[dict]) -> str:
    cols = ("model", "mode", "err", "grad err", "graphs", "fallbacks", "seconds", "ok", "error")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"{r[c]:.1e}" if c in ("err", "grad err") else f"{r[c]:.1f}" if c == "seconds" else str(r[c]) for c in cols]
        lines.append("| " + " | ".join(cells).replace("nan", "-") + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=None, help="comma-separated (default: all)")
    p.add_argument("--modes", default="infer", help="comma-separated of infer, train, dynamic")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    try:
        import transformers as tf
    except ImportError:
        print("the model sweep needs transformers (pip install transformers)")
        return 0
    builders = _builders(tf)
    names = args.models.split(",") if args.models else list(builders)
    unknown = [n for n in names if n not in builders]
    if unknown:
        p.error(f"unknown models {unknown}; known: {', '.join(builders)}")
    rows = []
    for mode in args.modes.split(","):
        if mode not in ("infer", "train", "dynamic"):
            p.error(f"unknown mode {mode!r}")
        for name in names:
            rows.append(check(name, builders[name], mode, args.device))
            r = rows[-1]
            print(f"{name} {mode}: {'ok' if r['ok'] else 'FAILED'} {r['error']}", file=sys.stderr, flush=True)
    print(table(rows))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
