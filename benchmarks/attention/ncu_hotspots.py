"""Ranks the warp-stall samples of an Nsight Compute source page.

    python3 -m benchmarks.attention.ncu_hotspots SOURCE_SASS_CSV [--top N]

SOURCE_SASS_CSV: `ncu --import REPORT --page source --print-source sass
--csv` (`tools/cascade-dev gpu profile` writes it). Prints the kernel's
stall samples by reason, then by instruction class (wgmma, mbarrier waits,
exp2, f32 math, address arithmetic, ...), then the `--top` instructions
with the most samples in address order, each with its two largest reasons.
A sample is charged to the instruction the warp waits at: a spin on an
mbarrier shows up on the branch after its try_wait, a named barrier on the
instruction after the bar.sync.
"""
import argparse
import collections
import csv
import re


def load(path):
    rows = list(csv.reader(open(path, newline="")))
    for i, r in enumerate(rows):
        if r and r[0] == "Address":
            hdr = r
            body = rows[i + 1:]
            break
    else:
        raise SystemExit(f"{path}: no 'Address' header (not an ncu --page source --csv)")
    out = []
    for r in body:
        if len(r) != len(hdr):
            continue
        d = dict(zip(hdr, r))
        out.append(d)
    return hdr, out


def num(s):
    try:
        return float(s)
    except ValueError:
        return 0.0


CLASSES = [
    ("wgmma / warpgroup", re.compile(r"^(HGMMA|WARPGROUP|WARPSYNC)")),
    ("mbarrier wait / arrive", re.compile(r"^(SYNCS|MBARRIER)")),
    ("named barrier (BAR)", re.compile(r"^BAR")),
    ("cp.async / loads", re.compile(r"^(LDGSTS|LDGDEPBAR|DEPBAR|LDG|LDS|LDSM|UTMALDG)")),
    ("stores", re.compile(r"^(STG|STS|STSM)")),
    ("exp2 / rcp (MUFU)", re.compile(r"^MUFU")),
    ("shuffles", re.compile(r"^SHFL")),
    ("f32 math", re.compile(r"^(FFMA|FMUL|FADD|FMNMX|FSEL|FSETP)")),
    ("conversions", re.compile(r"^(F2F|F2FP|I2F|F2I)")),
    ("integer / address", re.compile(r"^(IMAD|IADD|LEA|SHF|LOP|ISETP|IMNMX|SEL|MOV|UMOV|UIADD|ULEA|USHF|ULOP|UISETP|S2R|S2UR|R2UR|CS2R)")),
    ("control", re.compile(r"^(BRA|BSSY|BSYNC|EXIT|RET|CALL|NOP|YIELD|WARPSYNC)")),
]


def opcode(src):
    s = src.strip()
    if s.startswith("@"):
        s = s.split(None, 1)[1] if " " in s else s
    return s.split()[0].split(".")[0] if s else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    hdr, rows = load(a.csv)
    reasons = [h for h in hdr if h.startswith("stall_") and "(Not Issued)" not in h]
    total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows)
    print(f"{len(rows)} SASS instructions, {total:.0f} warp-stall samples")
    by_reason = collections.Counter()
    for r in rows:
        for h in reasons:
            by_reason[h] += num(r[h])
    print("\nsamples by reason:")
    for h, v in by_reason.most_common():
        if v:
            print(f"  {h:24s} {v:9.0f}  {100 * v / total:5.1f}%")
    by_class = collections.Counter()
    for r in rows:
        op = opcode(r["Source"])
        cls = next((c for c, rx in CLASSES if rx.match(op)), "other: " + op)
        by_class[cls] += num(r["Warp Stall Sampling (All Samples)"])
    print("\nsamples by instruction class (samples are charged to the instruction a warp waits at):")
    for c, v in by_class.most_common(20):
        print(f"  {c:28s} {v:9.0f}  {100 * v / total:5.1f}%")
    idx = {id(r): i for i, r in enumerate(rows)}
    top = sorted(rows, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[:a.top]
    print(f"\ntop {a.top} instructions (index in the kernel, samples, share, two largest reasons):")
    for r in sorted(top, key=lambda r: idx[id(r)]):
        v = num(r["Warp Stall Sampling (All Samples)"])
        rs = sorted(((num(r[h]), h[6:]) for h in reasons), reverse=True)[:2]
        why = ", ".join(f"{h} {x:.0f}" for x, h in rs if x)
        print(f"  {idx[id(r)]:5d} {v:8.0f} {100 * v / total:5.1f}%  "
              f"{r['Source'].strip()[:70]:70s} {why}")


if __name__ == "__main__":
    main()
