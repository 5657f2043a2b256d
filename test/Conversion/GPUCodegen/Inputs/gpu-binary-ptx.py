"""Writes the PTX held by the one gpu.binary of an MLIR file to a file.

Usage: gpu-binary-ptx.py IN.mlir OUT.ptx. The input is the output of
`gpu-module-to-binary{format=isa}`: the #gpu.object's `assembly` string,
printed with MLIR's escapes (\\XX hex for non-printable bytes, quotes and
backslashes), is decoded and written as is, for ptxas.
"""

import re
import sys


def main() -> int:
    text = open(sys.argv[1]).read()
    found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
    if len(found) != 1:
        sys.stderr.write(f"expected one gpu.object assembly, found {len(found)}\n")
        return 1
    ptx = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), found[0])
    with open(sys.argv[2], "w") as out:
        out.write(ptx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
