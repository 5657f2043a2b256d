# -*- Python -*-
# lit configuration of the Cascade-MLIR test suite.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "CASCADE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "Unit", "Integration", "Fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cascade_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# Lowers a module with gpu.modules of NVGPU/NVVM kernels to PTX (the GPU half
# of the cascade-to-ptx pipeline), for the building-block tests.
for chip in ("sm_80", "sm_90"):
    config.substitutions.append((
        "%gpu_to_ptx_" + chip,
        "--pass-pipeline='builtin.module(nvvm-attach-target{chip=" + chip +
        " features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,"
        "convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),"
        "gpu-module-to-binary{format=isa})'"))
config.substitutions.append(("%cascade_src_root", config.cascade_src_root))
import sys
config.substitutions.append(("%python", sys.executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                      "CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"])
llvm_config.use_default_substitutions()

tool_dirs = [config.cascade_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("cascade-opt", unresolved="fatal"),
    ToolSubst("cascade-plan", unresolved="ignore"),
    ToolSubst("cascade-compile", unresolved="ignore"),
    ToolSubst("cascade-bundle-check", unresolved="fatal"),
    ToolSubst("split-file", unresolved="fatal"),
    ToolSubst("not", unresolved="fatal"),
    ToolSubst("count", unresolved="fatal"),
    ToolSubst("mlir-translate", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if os.path.exists(os.path.join(config.cascade_tools_dir, "cascade-plan")):
    config.available_features.add("cascade-plan")
if os.path.exists(os.path.join(config.cascade_tools_dir, "cascade-compile")):
    config.available_features.add("cascade-compile")

# PTX checks run ptxas where the CUDA toolkit is installed (it is in CI).
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
