"""Checks, on the CPU, that a training step of ds4model.DS4 would run on a GPU: every tensor that
the forward and backward passes create (torch.arange, zeros, full, ... without a tensor to take
the device from) names its device. Such a call makes a CPU tensor that a CUDA run then mixes
with CUDA ones and fails on, minutes into a device session that has 15 minutes in all; here it is
caught in seconds without a GPU. Exits 1 and lists the source lines that create tensors without
a device.

  /usr/bin/python3 tools/tinyagent/device_check.py
"""
import os
import sys
import traceback

import torch
from torch.overrides import TorchFunctionMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ds4model import DS4, Config  # noqa: E402

FACTORIES = {torch.arange, torch.zeros, torch.ones, torch.full, torch.empty, torch.tensor, torch.eye, torch.randn,
             torch.rand, torch.randint, torch.linspace, torch.randperm}


class DevicelessFactories(TorchFunctionMode):
    """Records (function, file:line in ds4model.py) for each factory call without device=."""

    def __init__(self):
        super().__init__()
        self.found = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and "device" not in kwargs:
            frames = [f for f in traceback.extract_stack()[:-1] if f.filename.endswith("ds4model.py")]
            if frames:
                self.found.add((func.__name__, "%s:%d" % (os.path.basename(frames[-1].filename), frames[-1].lineno)))
        return func(*args, **kwargs)


def main():
    torch.manual_seed(0)
    model = DS4(Config(n_vocab=4096), seed=1)
    x = torch.randint(0, 4096, (2, 700))
    prefix = torch.randint(0, 4096, (300,))
    targets = torch.ones(2, 699, dtype=torch.bool)
    mode = DevicelessFactories()
    with mode:
        # a training step's passes (with a shared prefix: every compressor ratio and the indexer's
        # top-k see more rows than idx_top_k), and the parity reference's simulated formats
        model(x[:, :-1], targets=targets, prefix=prefix).sum().backward()
        with torch.no_grad():
            model(x[:, :200], sim=True)
    for func, where in sorted(mode.found, key=lambda f: f[1]):
        print("device_check: %s creates a tensor without a device (torch.%s)" % (where, func))
    if mode.found:
        sys.exit(1)
    print("device_check: every tensor the forward and backward passes create names its device")


if __name__ == "__main__":
    main()
