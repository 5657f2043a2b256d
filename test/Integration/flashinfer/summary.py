#!/usr/bin/env python3
"""Counts of a conformance run (`tools/cascade-dev gpu flashinfer`): passed /
failed / errors / skipped
per FlashInfer test file from pytest's JUnit XML, and the skip reasons with
their counts (ours name a documented limitation; the rest are the test
files' own skips). Exit status 1 if a test failed or errored, or none ran.

    python3 summary.py DIR    # DIR holds <file>.xml (or <file>.shard<i>of<n>.xml)

The shards of one file (one call's, or several calls' copied into one DIR)
make one row; with more than one XML file a last row gives the totals.
Failures that ran out of GPU memory (shards side by side on one GPU) are
counted apart.
"""
import collections
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET
from typing import Dict

OOM = re.compile(r"out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY", re.I)


def row(name: str, counts: collections.Counter) -> None:
    print(f"{name:36} {counts['tests']:6} {counts['passed']:6} {counts['failed']:6} "
          f"{counts['errors']:6} {counts['skipped']:7}")


def main(folder: str) -> int:
    bad = 0
    reasons: collections.Counter = collections.Counter()
    print(f"{'file':36} {'tests':>6} {'passed':>6} {'failed':>6} {'errors':>6} "
          f"{'skipped':>7}")
    files = sorted(glob.glob(os.path.join(folder, "*.xml")))
    if not files:
        print(f"no JUnit XML in {folder}")
        return 1
    total: collections.Counter = collections.Counter()
    per_file: Dict[str, collections.Counter] = {}
    for path in files:
        name = re.sub(r"\.shard\d+of\d+$", "", os.path.basename(path)[:-4])
        counts = per_file.setdefault(name, collections.Counter())
        for case in ET.parse(path).getroot().iter("testcase"):
            counts["tests"] += 1
            kids = {c.tag: c for c in case}
            if "failure" in kids or "error" in kids:
                counts["failed" if "failure" in kids else "errors"] += 1
                bad_kid = kids.get("failure", kids.get("error"))
                if OOM.search((bad_kid.get("message") or "") + (bad_kid.text or "")):
                    counts["oom"] += 1
            elif "skipped" in kids:
                counts["skipped"] += 1
                msg = kids["skipped"].get("message", "").split("\n")[0]
                reasons[msg[:160]] += 1
            else:
                counts["passed"] += 1
    for name, counts in per_file.items():
        bad += counts["failed"] + counts["errors"]
        total += counts
        row(name, counts)
    if len(files) > 1:
        row("total", total)
    if total["oom"]:
        print(f"\n{total['oom']} of the failures / errors ran out of GPU memory "
              "(fewer shards side by side: CASCADE_FI_JOBS)")
    print("\nskip reasons:")
    for msg, n in reasons.most_common():
        print(f"{n:6}  {msg}")
    if not total["tests"]:
        print("\nno test ran")
    return 1 if bad or not total["tests"] else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py DIR")
    sys.exit(main(sys.argv[1]))
