"""The models of the GPU model suite (benchmarks/suite.py), built with random weights.

    build("bert_base", "cuda")               # sized for an H200
    build("bert_base", "cpu", small=True)    # tiny config and batch, for this machine

Nothing is downloaded: torchvision, transformers and timm models are built from their
configs with random initialization (weights=None, pretrained=False), in eval mode, with
every dropout probability of their configs 0 (a no-op in eval mode; benchmarks/
train_suite.py puts the models in train mode and needs deterministic gradients).
A model whose library is missing raises MissingLibrary, whose message says what to
install; the suite prints it and goes on with the next model.

Each model is an nn.Module taking positional tensors and returning one tensor (the
transformers models return their last hidden state), so every contender is called,
compared and timed the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from strata.testing.models import GeluMLP, TransformerBlock, layer_norm, pointwise_chain, softmax_rows

# name -> the library it needs ("" for none beyond torch and strata)
MODELS: dict[str, str] = {
    "pointwise": "",
    "softmax": "",
    "layernorm": "",
    "mlp": "",
    "gpt_block": "",
    "resnet18": "torchvision",
    "bert_base": "transformers",
    "gpt2": "transformers",
    "vit_small": "timm",
}

# Models run only when named (--only): Llama-style decoders (RMSNorm, rotary
# embeddings, grouped-query attention, SwiGLU), for the max-autotune comparison.
EXTRA_MODELS: dict[str, str] = {"hf_llama": "transformers", "hf_mistral": "transformers"}

# The kernel-like models: autocast leaves their ops in fp32, so under bf16 they are
# also given bf16 inputs (otherwise their bf16 row would repeat the fp32 one).
TAKES_BF16_INPUTS = {"pointwise", "softmax", "layernorm"}


class MissingLibrary(RuntimeError):
    """The model's library cannot be imported here."""


@dataclass
class ModelCase:
    name: str
    module: nn.Module
    inputs: tuple  # positional inputs, on the device
    shape: str  # what the inputs are, in words


class Function(nn.Module):
    """A plain function as a module (the kernel models), with its tensor parameters."""

    def __init__(self, fn: Callable, *params: torch.Tensor):
        super().__init__()
        self.fn = fn
        # Plain attributes, not a ParameterList: torch 2.11's Dynamo fails on an empty one.
        self.names = tuple(f"p{i}" for i in range(len(params)))
        for name, p in zip(self.names, params):
            self.register_parameter(name, nn.Parameter(p, requires_grad=False))

    def forward(self, *args):
        return self.fn(*args, *(getattr(self, n) for n in self.names))


class LastHiddenState(nn.Module):
    """A transformers model called with input_ids, returning last_hidden_state."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).last_hidden_state


def _import(library: str):
    try:
        return __import__(library)
    except Exception as e:  # ImportError, or a build that does not load (a CUDA torchvision on CPU torch)
        hint = {  # torchvision 0.(N+15) goes with torch 2.N
            "torchvision": f"pip install --no-deps 'torchvision==0.{int(torch.__version__.split('.')[1]) + 15}.*'",
            "transformers": "pip install transformers",
            "timm": "pip install timm (it needs torchvision)",
        }[library]
        raise MissingLibrary(f"{library} cannot be imported ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); {hint}") from None


def build(name: str, device: str, small: bool = False) -> ModelCase:
    """The model `name` and its inputs, on `device`, seeded so every process builds the
    same weights and inputs."""
    if name not in MODELS and name not in EXTRA_MODELS:
        raise ValueError(f"unknown model {name!r}; the suite's models are: {', '.join([*MODELS, *EXTRA_MODELS])}")
    torch.manual_seed(0)
    case = _BUILDERS[name](small)
    case.module = case.module.to(device).eval()
    case.inputs = tuple(x.to(device) for x in case.inputs)
    return case


def _rows(small: bool) -> tuple[int, int]:
    return (256, 512) if small else (8192, 4096)


def _pointwise(small: bool) -> ModelCase:
    r, c = _rows(small)
    return ModelCase("pointwise", Function(pointwise_chain), (torch.randn(r, c), torch.randn(r, c)), f"{r}x{c}, 2 inputs")


def _softmax(small: bool) -> ModelCase:
    r, c = _rows(small)
    return ModelCase("softmax", Function(softmax_rows), (torch.randn(r, c),), f"{r}x{c}, dim -1")


def _layernorm(small: bool) -> ModelCase:
    r, c = _rows(small)
    return ModelCase("layernorm", Function(layer_norm, torch.randn(c), torch.randn(c)), (torch.randn(r, c),), f"{r}x{c}")


def _mlp(small: bool) -> ModelCase:
    d, tokens = (64, 256) if small else (1024, 4096)
    return ModelCase("mlp", GeluMLP(d, 4 * d), (torch.randn(tokens, d),), f"{tokens} tokens, {d}->{4 * d}->{d}, GELU")


def _gpt_block(small: bool) -> ModelCase:
    b, t, d, h = (2, 64, 64, 4) if small else (8, 256, 768, 12)
    return ModelCase("gpt_block", TransformerBlock(d, h), (torch.randn(b, t, d),), f"b={b}, t={t}, d={d}, {h} heads")


def _resnet18(small: bool) -> ModelCase:
    tv = _import("torchvision")
    b, hw = (2, 32) if small else (32, 224)
    model = tv.models.resnet18(weights=None)
    return ModelCase("resnet18", model, (torch.randn(b, 3, hw, hw),), f"b={b}, {hw}x{hw}")


# The configs' dropout probabilities (0.1 by default), set to 0; timm's ViT has 0 by default.
_NO_DROPOUT = {
    "bert": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
    "gpt2": {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0},
}


def _bert_base(small: bool) -> ModelCase:
    tf = _import("transformers")
    if small:
        config = tf.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=256, max_position_embeddings=128, **_NO_DROPOUT["bert"])
        b, t = 2, 32
    else:
        config = tf.BertConfig(**_NO_DROPOUT["bert"])  # BERT-base: 12 layers, d=768, 12 heads
        b, t = 8, 512
    ids = torch.randint(0, config.vocab_size, (b, t))
    return ModelCase("bert_base", LastHiddenState(tf.BertModel(config, add_pooling_layer=False)), (ids,), f"b={b}, seq={t}, {config.num_hidden_layers} layers, d={config.hidden_size}")


def _gpt2(small: bool) -> ModelCase:
    tf = _import("transformers")
    if small:
        config = tf.GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=2, n_positions=128,
                               bos_token_id=0, eos_token_id=0, use_cache=False, **_NO_DROPOUT["gpt2"])
        b, t = 2, 32
    else:
        config = tf.GPT2Config(use_cache=False, **_NO_DROPOUT["gpt2"])  # GPT-2 small: 12 layers, d=768, 12 heads
        b, t = 8, 512
    ids = torch.randint(0, config.vocab_size, (b, t))
    return ModelCase("gpt2", LastHiddenState(tf.GPT2Model(config)), (ids,), f"b={b}, seq={t}, {config.n_layer} layers, d={config.n_embd}")


def _vit_small(small: bool) -> ModelCase:
    timm = _import("timm")
    if small:
        model = timm.create_model("vit_small_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=2, embed_dim=64, num_heads=2)
        b, hw = 2, 32
    else:
        model = timm.create_model("vit_small_patch16_224", pretrained=False)
        b, hw = 32, 224
    return ModelCase("vit_small", model, (torch.randn(b, 3, hw, hw),), f"b={b}, {hw}x{hw}")


def _llama_config(tf, kind: str, small: bool):
    sizes = dict(hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2) if small else dict(hidden_size=1024, intermediate_size=2816,
                                                           num_hidden_layers=8, num_attention_heads=16,
                                                           num_key_value_heads=4)
    common = dict(vocab_size=1000 if small else 32000, max_position_embeddings=2048, use_cache=False, **sizes)
    if kind == "mistral":  # sliding-window attention, shorter than the sequence
        return tf.MistralConfig(sliding_window=16 if small else 256, **common)
    return tf.LlamaConfig(**common)


def _hf_decoder(kind: str, small: bool) -> ModelCase:
    tf = _import("transformers")
    config = _llama_config(tf, kind, small)
    model = tf.MistralModel(config) if kind == "mistral" else tf.LlamaModel(config)
    b, t = (2, 32) if small else (4, 512)
    ids = torch.randint(0, config.vocab_size, (b, t))
    return ModelCase(f"hf_{kind}", LastHiddenState(model), (ids,),
                     f"b={b}, seq={t}, {config.num_hidden_layers} layers, d={config.hidden_size}, GQA "
                     f"{config.num_attention_heads}/{config.num_key_value_heads}")


_BUILDERS: dict[str, Callable[[bool], ModelCase]] = {
    "hf_llama": lambda small: _hf_decoder("llama", small),
    "hf_mistral": lambda small: _hf_decoder("mistral", small),
    "pointwise": _pointwise,
    "softmax": _softmax,
    "layernorm": _layernorm,
    "mlp": _mlp,
    "gpt_block": _gpt_block,
    "resnet18": _resnet18,
    "bert_base": _bert_base,
    "gpt2": _gpt2,
    "vit_small": _vit_small,
}
