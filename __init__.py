"""strata: an MLIR-style multi-level IR compiler for PyTorch programs."""

__version__ = "0.1.0"
