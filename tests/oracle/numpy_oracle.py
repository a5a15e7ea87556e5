"""Evaluates NumPy expressions for kiln's oracle tests.

Usage: numpy_oracle.py DIR. DIR/cases.txt holds one case per line:
    INDEX <TAB> EXPRESSION <TAB> comma-separated input .npy names (may be empty)
Inputs are bound to a, b, c, ... and `np` is NumPy. The result is written
as DIR/out_INDEX.npy; if NumPy raises, DIR/err_INDEX.txt holds the message.
"""
import os
import sys
import traceback

import numpy as np


def bf16(a):
    """A bf16 input (NumPy has no bf16: kiln writes two-byte voids) as a torch tensor."""
    import torch
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int16).copy()).view(torch.bfloat16)


def from_bf16(t):
    """A torch bfloat16 tensor as the two-byte voids kiln reads as bf16."""
    import torch
    return t.to(torch.bfloat16).contiguous().view(torch.int16).numpy().view(np.dtype("V2"))


def main(directory):
    loaded = {}  # an input shared by several cases is read once
    with open(os.path.join(directory, "cases.txt")) as cases:
        for line in cases:
            line = line.rstrip("\n")
            if not line:
                continue
            index, expression, inputs = line.split("\t")
            names = [name for name in inputs.split(",") if name]
            scope = {"np": np, "bf16": bf16, "from_bf16": from_bf16}
            for letter, name in zip("abcdefghijklmnopqrstuvwxyz", names):
                if name not in loaded:
                    loaded[name] = np.load(os.path.join(directory, name))
                scope[letter] = loaded[name]
            try:
                with np.errstate(all="ignore"):
                    result = np.asarray(eval(expression, scope))
                # np.ascontiguousarray would turn a 0-d result into shape (1,).
                np.save(os.path.join(directory, "out_%s.npy" % index), np.asarray(result, order="C"))
            except Exception:  # the test decides whether NumPy rejecting the case is expected
                with open(os.path.join(directory, "err_%s.txt" % index), "w") as error:
                    error.write(traceback.format_exc())


if __name__ == "__main__":
    main(sys.argv[1])
