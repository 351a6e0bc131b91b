# extract_notebook_cells.py — the numbers a notebook printed, cell by cell, for the tests that
# compare an example's output with its notebook (tests/examples/test_notebook_NNN.cpp).
#
#     /usr/bin/python3 tests/reference/extract_notebook_cells.py NOTEBOOK.txt NNN [FIRST-LAST ...]
#
# NOTEBOOK.txt is the notebook as text: each code cell starts with its label line "In [N]:",
# followed by its code, a blank line and what it printed; markdown may follow. The ranges are the
# cells whose numbers are reproducible (by label; a label may appear more than once and every cell
# in range is kept); without any, only the labels are written (a notebook whose printed numbers
# cannot be reproduced). Writes tests/reference/notebook_NNN_cells.json:
#
#   {"notebook": "NNN", "labels": ["1", "3", ...],          every cell's label, in order
#    "cells": [{"index": 3, "label": "5", "numbers": ["4", "8", "2"]}, ...]}
#
# index is the cell's position in "labels"; "truncated": true marks a cell whose output the notebook
# cut short (its numbers are the first ones the cell prints). Numbers are kept as printed ("1.9269",
# "-inf", "2.", "True" and "False" for bools); a hexadecimal address (<torch._C.Generator at
# 0x10adb0b10>) and digits inside names (grad_fn=<MmBackward0>, torch.float64) are not numbers.
import json
import os
import re
import sys

MARKER = re.compile(r"^In \[([^\]]*)\]:\s*$")
# The first line of something a cell printed (a repr or a print()), as opposed to code or markdown;
# a print() may put a label before it ("context_vecs.shape: torch.Size([2, 6, 2])").
OUTPUT_START = re.compile(r"^([A-Za-z_][\w .]*:\s+)?"
                          r"(tensor\(|torch\.Size\(|\(torch\.Size|True$|False$|<torch\._C\.Generator|-?\d)")
# A separator a cell printed between its outputs ("-----", "-----Dot product of a and a.T-----").
SEPARATOR = re.compile(r"^---")
NUMBER = re.compile(r"(?<![\w.])(-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)|True|False)(?![\w.])")


def split_cells(text):
    """[(label, body lines)] for every "In [N]:" line, in order."""
    cells = []
    for line in text.splitlines():
        m = MARKER.match(line)
        if m:
            cells.append((m.group(1), []))
        elif cells:
            cells[-1][1].append(line)
    return cells


def output_of(body):
    """(lines, truncated): the lines a cell printed, from the first output line that follows a
    blank line, item by item (brackets balanced, blank lines and separators between items
    allowed), up to the first line that is neither (markdown); truncated when the text ends
    inside an item (brackets left open: the notebook's output was cut short)."""
    start = next((i for i, line in enumerate(body) if OUTPUT_START.match(line) and (i == 0 or not body[i - 1].strip())),
                 None)
    if start is None:
        return [], False
    out, depth, i = [], 0, start
    while i < len(body):
        line = body[i]
        if depth == 0 and not line.strip():
            i += 1
            continue
        if depth == 0 and not OUTPUT_START.match(line) and not SEPARATOR.match(line):
            break
        out.append(line)
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        i += 1
    return out, depth > 0


def numbers_in(lines):
    return NUMBER.findall("\n".join(lines))


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: extract_notebook_cells.py NOTEBOOK.txt NNN [FIRST-LAST ...]")
    path, notebook, ranges = argv[1], argv[2], [tuple(int(x) for x in r.split("-")) for r in argv[3:]]
    with open(path, encoding="utf-8") as f:
        cells = split_cells(f.read())
    doc = {"notebook": notebook, "labels": [label for label, _ in cells], "cells": []}
    for index, (label, body) in enumerate(cells):
        if label.isdigit() and any(lo <= int(label) <= hi for lo, hi in ranges):
            lines, truncated = output_of(body)
            entry = {"index": index, "label": label, "numbers": numbers_in(lines)}
            if truncated:
                entry["truncated"] = True
            doc["cells"].append(entry)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "notebook_%s_cells.json" % notebook)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", out, ":", len(doc["cells"]), "cells,", sum(len(c["numbers"]) for c in doc["cells"]), "numbers")


if __name__ == "__main__":
    main(sys.argv)
