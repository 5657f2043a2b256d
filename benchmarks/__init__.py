"""Benchmarks of Cascade-MLIR. Run them as modules from the repository root,
e.g. `python3 -m benchmarks.attention.bench BUNDLE_DIR`; `benchmarks.common`
holds what they share (the CUDA-event timer, the kernel-bundle launcher and
the binding of runtime plans to kernel parameters)."""
