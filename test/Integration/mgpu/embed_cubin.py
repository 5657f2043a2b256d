#!/usr/bin/env python3
"""Replaces the PTX of every NVVM `#gpu.object` in an MLIR file with the
cubin that ptxas makes of it for the object's chip, so that the host code
loads its kernels with mgpuModuleLoad instead of having the driver JIT the
PTX at program start (tens of seconds for the mgpu test's objects).

    embed_cubin.py PTXAS IN.mlir OUT.mlir
"""
import os
import re
import subprocess
import sys
import tempfile

OBJECT = re.compile(r'(#gpu\.object<#nvvm\.target<[^>]*chip = "(sm_[0-9a-z]+)"[^>]*>, '
                    r'(?:properties = \{[^}]*\}, )?)assembly = "((?:[^"\\]|\\.)*)"')
ESCAPES = {"\\": b"\\", '"': b'"', "n": b"\n", "t": b"\t"}


def unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] != "\\":
            j = s.find("\\", i)
            j = len(s) if j < 0 else j
            out += s[i:j].encode()
            i = j
        elif s[i + 1] in ESCAPES:
            out += ESCAPES[s[i + 1]]
            i += 2
        else:
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
    return bytes(out)


def main():
    ptxas, src, dst = sys.argv[1:4]
    text = open(src).read()

    def cubin(m):
        with tempfile.TemporaryDirectory() as d:
            ptx, obj = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
            with open(ptx, "wb") as f:
                f.write(unescape(m.group(3)))
            subprocess.run([ptxas, f"-arch={m.group(2)}", ptx, "-o", obj], check=True)
            data = open(obj, "rb").read()
        return m.group(1) + 'bin = "' + "".join(f"\\{b:02X}" for b in data) + '"'

    text, n = OBJECT.subn(cubin, text)
    if n == 0:
        sys.exit(f"embed_cubin.py: no PTX object in {src}")
    open(dst, "w").write(text)


if __name__ == "__main__":
    main()
