"""strata: an MLIR-style multi-level IR compiler for PyTorch programs."""
