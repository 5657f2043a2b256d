#!/usr/bin/env python3
"""Checks a cascade-mlir wheel: every ELF file in it may need only the
libraries of the manylinux policy (glibc's, libstdc++, libgcc_s) and the
CUDA driver, which the runtime loads itself; reports each ELF file's newest
glibc symbol version (the manylinux_2_N tag it meets) and the sizes.

    check-wheel.py WHEEL [--max-mib 64]

Exits 1 if an ELF file needs another library or the wheel is larger than
--max-mib (the device tool's carry)."""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile

#: The manylinux policy's libraries (PEP 600 / auditwheel's policy, the ones
#: a C++ extension may need) and the CUDA driver.
ALLOWED = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0",
    "ld-linux-x86-64.so.2", "libgcc_s.so.1", "libstdc++.so.6", "libcuda.so.1",
}


def needed(path: str) -> list:
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def newest_glibc(path: str) -> str:
    out = subprocess.run(["readelf", "-V", "-W", path], capture_output=True, text=True,
                         check=True).stdout
    versions = {tuple(int(x) for x in v.split("."))
                for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", out)}
    return ".".join(map(str, max(versions))) if versions else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel")
    ap.add_argument("--max-mib", type=float, default=64.0)
    args = ap.parse_args()
    bad = []
    size = os.path.getsize(args.wheel)
    print(f"{os.path.basename(args.wheel)}: {size / 2**20:.1f} MiB")
    with zipfile.ZipFile(args.wheel) as z, tempfile.TemporaryDirectory() as tmp:
        for info in z.infolist():
            if info.filename.endswith(".lock"):
                bad.append(f"{info.filename}: a build lock file in the wheel")
                continue
            with z.open(info) as f:
                head = f.read(20)
            # Host ELF files only (x86-64, e_machine 62): a cubin is an ELF
            # file for the GPU, loaded by the driver.
            if head[:4] != b"\x7fELF" or int.from_bytes(head[18:20], "little") != 62:
                continue
            path = z.extract(info, tmp)
            libs = needed(path)
            extra = sorted(set(libs) - ALLOWED)
            print(f"  {info.filename}: {info.file_size / 2**20:.1f} MiB "
                  f"({info.compress_size / 2**20:.1f} compressed), glibc >= "
                  f"{newest_glibc(path)}, needs {', '.join(libs) or 'nothing'}")
            if extra:
                bad.append(f"{info.filename} needs {', '.join(extra)}")
    if size > args.max_mib * 2**20:
        bad.append(f"the wheel is {size / 2**20:.1f} MiB, over {args.max_mib} MiB")
    for b in bad:
        print(f"error: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
