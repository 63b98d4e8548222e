#!/usr/bin/python3
"""large_seeds.py DIR: large-input seeds for `make fuzz`, written at run time
(not kept in git): the shapes of issue 15 item 3 that were quadratic to load
(200,000 shapes, 50,000 strategies, a 20,000-operand chain), so the fuzzers
start from inputs big enough to find slow paths again."""
import json
import os
import sys


def labels(n):
    out, cp = [], 0x100
    while len(out) < n:
        if not (0xD800 <= cp <= 0xDFFF or 0x200B <= cp <= 0x206F
                or cp == 0xFEFF):
            out.append(chr(cp))
        cp += 1
    return out


def main(d):
    os.makedirs(os.path.join(d, "instance"), exist_ok=True)
    os.makedirs(os.path.join(d, "pathfile"), exist_ok=True)
    inst = os.path.join(d, "instance")
    with open(os.path.join(inst, "shapes200k.json"), "w") as f:
        json.dump({"name": "s", "format_string": "ab,bc->ac",
                   "shapes": [[1]] * 200000, "dtype": "float64",
                   "num_tensors": 2}, f)
    with open(os.path.join(inst, "strategies50k.json"), "w") as f:
        json.dump({"name": "s", "format_string": "ij,jk->ik",
                   "shapes": [[2, 2], [2, 2]], "dtype": "float64",
                   "num_tensors": 2,
                   "paths": {"s%d" % k: {"path": [[0, 1]]}
                             for k in range(50000)}}, f)
    n = 20000
    lab = labels(n + 1)
    path = [[0, 1]] + [[0, n - 1 - s] for s in range(1, n - 1)]
    with open(os.path.join(inst, "chain20k.json"), "w") as f:
        json.dump({"name": "c", "format_string":
                   ",".join(lab[k] + lab[k + 1] for k in range(n)) + "->"
                   + lab[0] + lab[n], "shapes": [[2, 2]] * n,
                   "dtype": "float64", "num_tensors": n,
                   "paths": {"opt_flops": {"path": path}}}, f,
                  ensure_ascii=False)
    with open(os.path.join(d, "pathfile", "steps100k.json"), "w") as f:
        json.dump({"instance": "f", "paths": {
            "opt_flops": {"path": [[0, 1]] * 100000}}}, f)


if __name__ == "__main__":
    main(sys.argv[1])
