"""The tile heuristics of codegen/triton_tiles.py, at the points they were measured on
an H200 (benchmarks/gpu_tiles.py, benchmarks/gpu_tile_sweep.py)."""

from __future__ import annotations


def test_persistent_warps_keep_two_programs_a_multiprocessor():
    from strata.codegen.triton_tiles import persistent_warps, reduction_tile

    assert persistent_warps(1024, 1) == 4  # 8 elements a thread
    assert persistent_warps(4096, 1) == 16 and persistent_warps(4096, 3) == 16
    # layer norm's three rows of 8192 at 16 warps left one program a multiprocessor
    # (102 us against 72.5 us at 8 warps)
    assert persistent_warps(8192, 3) == 8 and persistent_warps(8192, 1) == 16
    assert reduction_tile(32768, 1024, "inner", loads=3, passes=3) == (True, 1, 1024, 4, 1)


def test_rows_of_16_bit_elements_take_fewer_warps():
    from strata.codegen.triton_tiles import persistent_warps, reduction_tile

    # 32 elements a thread for bf16/f16 rows (H200: 8192x4096 bf16 softmax 40.5 us at
    # 4 warps, 51.8 us at 16); f32 rows keep 8.
    assert [persistent_warps(n, 1, 2) for n in (1024, 2048, 4096, 8192)] == [1, 2, 4, 8]
    assert [persistent_warps(n, 1, 4) for n in (1024, 2048, 4096)] == [4, 8, 16]
    assert reduction_tile(8192, 4096, "inner", loads=3, passes=3, itemsize=2).num_warps == 4


def test_rows_of_layer_norm_take_32_elements_a_thread():
    from strata.codegen.triton_tiles import reduction_tile

    # H200, f32 layer norm (x, weight, bias: three rows): 8192x4096 70.1 us at 4 warps
    # against 71.3 at 16; f32 softmax (one row) is fastest at 16 (69.2 against 70.5).
    assert reduction_tile(8192, 4096, "inner", loads=3, passes=3).num_warps == 4
    assert reduction_tile(8192, 4096, "inner", loads=1, passes=3).num_warps == 16
    assert reduction_tile(16384, 2048, "inner", loads=3, passes=3).num_warps == 2
    assert reduction_tile(4096, 8192, "inner", loads=3, passes=3).num_warps == 8
    # rows shorter than 2048, or fewer than 2048 of them, keep 8 elements a thread
    assert reduction_tile(32768, 1024, "inner", loads=3, passes=3).num_warps == 4
    assert reduction_tile(1024, 4096, "inner", loads=3, passes=3).num_warps == 16


def test_few_long_rows_take_eight_warps():
    from strata.codegen.triton_tiles import reduction_tile

    # A decode step's K and V products (H200, bf16, in CUDA graphs, L2 cold): 512 rows
    # of 2048, 3.93 us at 2 warps against 3.24 at 8. 2048 rows keep the per-thread rule
    # (2 warps: 3.65 us, against 3.68 at 4).
    assert reduction_tile(512, 2048, "inner", True, loads=3, itemsize=2).num_warps == 8
    assert reduction_tile(1024, 4096, "inner", True, loads=3, itemsize=2).num_warps == 8
    assert reduction_tile(2048, 2048, "inner", True, loads=2, itemsize=2).num_warps == 2
    assert reduction_tile(512, 512, "inner", True, loads=2, itemsize=2).num_warps < 8


def test_small_pointwise_kernels_spread_over_programs_of_256():
    """Up to SMALL_POINTWISE elements (a decode step's rotations), programs of 256 at
    2 warps; larger kernels keep blocks of 1,024, the smallest one program."""
    from strata.codegen.triton_tiles import SMALL_POINTWISE, Tile, pointwise_tile

    assert pointwise_tile(2048) == pointwise_tile(512) == pointwise_tile(SMALL_POINTWISE) == Tile(False, 256, 1, 2)
    assert pointwise_tile(SMALL_POINTWISE + 1) == Tile(False, 1024, 1, 4)
    assert pointwise_tile(1 << 20) == Tile(False, 1024, 1, 4)
    assert pointwise_tile(200) == Tile(False, 256, 1, 1) and pointwise_tile(100) == Tile(False, 128, 1, 1)
