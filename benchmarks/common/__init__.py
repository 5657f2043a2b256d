"""What the benchmarks (and the float64 GPU check, test/Integration/gpu) share:

- timing:  the one benchmark timer, `cuda_time_us` (median of CUDA-event
           timings after warm-up, in microseconds, on a torch or cupy
           stream) and `graph_time_us` (the same over a captured CUDA graph);
- bundle:  the kernel-bundle launcher (cupy; parameters bound by name from
           the bundle's manifest) and `plan_buffers`, which binds a plan of
           the runtime (`cascade_mlir._runtime.plan`) to the kernels'
           parameters. Plans come from the runtime only.
"""
