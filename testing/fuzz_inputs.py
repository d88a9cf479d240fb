"""The tensors a fuzzed Python program is called with, written as short expressions.

A reproducer of the differential fuzzer (testing/fuzz.py) names each tensor argument
as a call of `tensor`, so the text alone rebuilds it:

    tensor((2, 3, 4, 5), torch.float32, "channels_last", seed=7)

and an index tensor as a literal (`torch.tensor([1, 100000000])`, `literal(t)` writes
it), so that an out-of-range index is visible in the text.
"""

from __future__ import annotations

import torch

# How a tensor argument's elements are laid out in memory. Each layout but
# "contiguous" applies to some ranks only (LAYOUT_RANKS); the values are the same
# whatever the layout, only the strides differ.
LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "channels_last")
LAYOUT_RANKS = {
    "contiguous": range(0, 5),
    "transposed": range(2, 5),  # the last two dims' strides swapped
    "strided": range(1, 5),  # every 2nd element of the last dim, from a storage offset of 1
    "expanded": range(1, 5),  # dim 0 broadcast from size 1: stride 0
    "channels_last": range(4, 5),
}


def tensor(shape: tuple[int, ...], dtype: torch.dtype, layout: str = "contiguous", seed: int = 0) -> torch.Tensor:
    """A tensor of `shape` and `dtype` with values drawn from `seed` (floats: normal
    with standard deviation 3; ints: -5 to 5; bools: half True), laid out as `layout`
    says (LAYOUTS)."""
    shape = tuple(shape)
    if len(shape) not in LAYOUT_RANKS[layout]:
        raise ValueError(f"layout {layout!r} needs a rank in {list(LAYOUT_RANKS[layout])}, not {len(shape)}")
    generator = torch.Generator().manual_seed(seed)

    def values(size: tuple[int, ...]) -> torch.Tensor:
        if dtype.is_floating_point:
            return (torch.randn(size, generator=generator, dtype=torch.float64) * 3).to(dtype)
        if dtype == torch.bool:
            return torch.rand(size, generator=generator) < 0.5
        return torch.randint(-5, 6, size, generator=generator, dtype=dtype)

    if layout == "transposed":
        return values((*shape[:-2], shape[-1], shape[-2])).transpose(-1, -2)
    if layout == "strided":
        return values((*shape[:-1], 2 * shape[-1] + 1))[..., 1::2]
    if layout == "expanded":
        return values((1, *shape[1:])).expand(shape)
    if layout == "channels_last":
        return values(shape).contiguous(memory_format=torch.channels_last)
    return values(shape)


def literal(t: torch.Tensor) -> str:
    """Python source that rebuilds the int64 tensor t (contiguous), values and all."""
    if t.numel() == 0:
        return f"torch.zeros({tuple(t.shape)}, dtype=torch.int64)"
    return f"torch.tensor({t.tolist()})"
