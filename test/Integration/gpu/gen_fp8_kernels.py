#!/usr/bin/env python3
"""Writes fp8_kernels.mlir: the decode kernels of kernels.mlir (plain and
split-KV, every layout, form and option there; over fp8 selection puts
G >= 2 on mma_sync and G = 1 on rows) and the
tensor-core kernels of mma_kernels.mlir listed in MMA (prefill causal or
not, split, accumulate, RoPE, ALiBi, soft cap + window, large-group decode,
split decode), with the KV cache in f8E4M3FN and again in f8E5M2 (q and o
keep their dtype), for the fp8 GPU check (check.py --fp8). Then the decode
benchmark's shape (32/8 heads, D=128, page 16, NHD pool; plain and split),
which selection puts on mma_sync, again at hand-written kernel
configurations (FORCED_DECODE): the fp8 bench times them all side by side
and check.py --fp8 checks them. Run from anywhere:
  python3 test/Integration/gpu/gen_fp8_kernels.py"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
FP8 = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}
MMA = ("mma_f16_d128_g4_p16_nhd_pool_causal", "mma_f16_d128_g4_p16_nhd_pool",
       "mma_bf16_d64_g8_p1_hnd_pair_causal_softcap_window",
       "mma_f16_d256_g4_p16_nhd_pair_causal", "mma_f16_d128_g4_p16_nhd_pool_causal_rope_basee",
       "mma_f16_d128_g4_p16_nhd_pool_alibi", "mma_split_f16_d128_g4_p16_nhd_pool_causal",
       "mma_split_bf16_d64_g8_p1_hnd_pair", "mma_acc_f16_d128_g4_p16_nhd_pool_causal",
       "mma_split_acc_f16_d128_g4_p16_nhd_pool", "mmadec_f16_d128_g16",
       "mmadec_bf16_d128_g64_hnd", "mmadec_split_f16_d128_g16",
       # The two-level decode cascade of benchmarks/attention (32/8, 32/32).
       "mma_split_f16_d128_g4_p16_nhd_pool", "dec_acc_f16_d128_g4",
       "mma_split_f16_d128_g1_p16_nhd_pool", "dec_acc_f16_d128_g1")
# The benchmark's decode (and split decode) at other kernel configurations
# than selection's (mma_sync, q_tile 16 holding the group of 4, 4 warps
# along 64-key tiles, 4 staging stages: two blocks an SM), one kernel per
# configuration: the rows family; 64-key tiles in 2 stages (the best of the
# first H200 run, three blocks an SM now that fp8 keeps one converted K/V
# tile) and 3; 2 warps along 32-key tiles in 4 and 6 stages (4 and 3 blocks
# an SM); 8 warps along 128-key tiles (16 keys a warp, one block an SM).
# (Block counts of the converted K tile.) Every mma_sync configuration here
# reads K from its fp8 staging ring (`_kdirect`; now V too, `_kvdirect`,
# which drops the V tile as well: fp8_staging = direct_kv, which a
# hand-written configuration must say), which drops the K tile
# (32-key tiles in 4 stages: 44 KiB, 5 blocks an SM) and leaves room for
# more stages: 32-key tiles in 5 and 8 stages (52 and 76 KiB, 4 and 2
# blocks an SM) and 64-key tiles over 4 warps in 4 (84 KiB, 2 blocks).
# Fewer stages, more blocks an SM (a batch of many short requests runs in
# waves of resident blocks, so the count of those matters there): 32-key
# tiles in 3 and 2 stages, and one warp along 16-key tiles in 6.
FORCED_SOURCES = ("dec_f16_d128_g4_p16_nhd_pool", "split_f16_d128_g4_p16_nhd_pool")
FORCED_DECODE = {
    "rows": "rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4",
    "kv64s2": "mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2, fp8_staging = direct_kv",
    "kv64s3": "mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 3, fp8_staging = direct_kv",
    "kv32s4": "mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 4, fp8_staging = direct_kv",
    "kv32s6": "mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 6, fp8_staging = direct_kv",
    "kv128w8": "mma_sync, threads = [32, 1, 8], q_tile = 16, kv_tile = 128, stages = 2, fp8_staging = direct_kv",
    "kv32s5": "mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 5, fp8_staging = direct_kv",
    "kv32s8": "mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 8, fp8_staging = direct_kv",
    "kv64s4": "mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 4, fp8_staging = direct_kv",
    "kv32s3": "mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_kv",
    "kv32s2": "mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_kv",
    "kv16s6": "mma_sync, threads = [32, 1, 1], q_tile = 16, kv_tile = 16, stages = 6, fp8_staging = direct_kv"}
# A KV buffer: a 5-D pool or a 4-D (k, v) page tensor of f16/bf16.
KV_TYPE = re.compile(r"memref<(\?(?:x\d+){3,4})x(?:f16|bf16)>")


def functions(path, pattern):
    """(name, text) of the functions of `path` whose names match `pattern`."""
    with open(os.path.join(HERE, path)) as f:
        text = f.read()
    found = re.findall(r"^(func\.func @(\w+)\(.*?^}\n)", text, re.M | re.S)
    return [(name, body) for body, name in found if re.fullmatch(pattern, name)]


def main():
    rows = functions("kernels.mlir", r"(dec|split)_\w+")
    mma = functions("mma_kernels.mlir", "|".join(MMA))
    assert rows and len(mma) == len(MMA)
    forced = []
    for name, body in functions("kernels.mlir", "|".join(FORCED_SOURCES)):
        for tag, config in FORCED_DECODE.items():
            attr = f", cascade.kernel_config = #cascade.kernel_config<{config}>}}"
            new = f"{name}_{tag}"
            forced.append((new, re.sub(r"\}\n  return", attr + "\n  return",
                                       body.replace(f"@{name}(", f"@{new}(", 1), count=1)))
    assert len(forced) == len(FORCED_SOURCES) * len(FORCED_DECODE)
    funcs = [n for n, _ in rows + mma + forced]
    bodies = [b for _, b in rows + mma + forced]
    out = ["// GENERATED by gen_fp8_kernels.py from kernels.mlir and mma_kernels.mlir: the",
           "// kernels with an fp8 KV cache (e4m3 and e5m2), for check.py --fp8 and the fp8",
           "// decode benchmark. Not a lit test.",
           "// Build the bundle:  cascade-opt fp8_kernels.mlir --cascade-to-ptx=\"bundle-dir=DIR\"",
           ""]
    for short, mlir in FP8.items():
        for name, body in zip(funcs, bodies):
            body = KV_TYPE.sub(lambda m: f"memref<{m.group(1)}x{mlir}>", body)
            out.append(body.replace(f"@{name}(", f"@{name}_{short}(", 1))
    with open(os.path.join(HERE, "fp8_kernels.mlir"), "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
