#!/usr/bin/env python3
"""Counts of a conformance run (`tools/cascade-dev gpu flashinfer`): passed /
failed / errors / skipped
per FlashInfer test file from pytest's JUnit XML, and the skip reasons with
their counts (ours name a documented limitation; the rest are the test
files' own skips). Exit status 1 if a test failed or errored.

    python3 summary.py DIR    # DIR holds <file>.xml (or <file>.shard<i>of<n>.xml)

With more than one XML file (files, or the shards of several calls copied
into one DIR) a last row gives the totals.
"""
import collections
import glob
import os
import sys
import xml.etree.ElementTree as ET


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
    for path in files:
        counts = collections.Counter()
        for case in ET.parse(path).getroot().iter("testcase"):
            counts["tests"] += 1
            kids = {c.tag: c for c in case}
            if "failure" in kids:
                counts["failed"] += 1
            elif "error" in kids:
                counts["errors"] += 1
            elif "skipped" in kids:
                counts["skipped"] += 1
                msg = kids["skipped"].get("message", "").split("\n")[0]
                reasons[msg[:160]] += 1
            else:
                counts["passed"] += 1
        bad += counts["failed"] + counts["errors"]
        total += counts
        row(os.path.basename(path)[:-4], counts)
    if len(files) > 1:
        row("total", total)
    print("\nskip reasons:")
    for msg, n in reasons.most_common():
        print(f"{n:6}  {msg}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py DIR")
    sys.exit(main(sys.argv[1]))
