"""ResNet-18's convolution shapes one at a time (random data, batch --batch): luminal's program
as the graph is written (the windows stored by an im2col kernel, then the GEMM) against the
implicit GEMM (schedule window 1, the cost model's pick: each panel of windows copied from the
input in runs as the GEMM packs it), Winograd's F(2x2, 3x3) and F(4x4, 3x3) (schedule winograd 2
and 4, 3x3 layers only) and torch's conv2d, side by side in one run. Prints
milliseconds (median of --iters) and GFLOP/s, and each luminal program's ratio to torch. Not
a test.

    python benchmarks/conv.py [--batch 8] [--iters 7]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import luminal as lm  # noqa: E402
from luminal.nn import functional as F  # noqa: E402
from matmul_cases import scheduled  # noqa: E402
from train import median_step  # noqa: E402

# (channels in, channels out, input side, kernel, stride): the stem and each stage's 3x3 conv
SHAPES = [(3, 64, 224, 7, 2), (64, 64, 56, 3, 1), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1),
          (512, 512, 7, 3, 1)]


def median_ms(fn, iters):
    return median_step(fn, iters) * 1e3


def luminal_conv(x_data, w_data, stride, schedule, iters):
    cx = lm.Graph()
    x = cx.tensor(tuple(x_data.shape))
    w = cx.tensor(tuple(w_data.shape), parameter=True)
    y = F.conv2d(x, w, stride=stride, padding=w_data.shape[-1] // 2)
    out = (scheduled(y, schedule) if schedule else y).output()
    rt = lm.CpuRuntime()
    rt._load(cx, None)
    rt.set_data(x, x_data)
    rt.set_data(w, w_data)
    ms = median_ms(lambda: rt.execute({}), iters)
    text = rt._rt.program_text()
    return ms, np.asarray(rt.get(out)), "b=window" in text, " winograd" in text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--iters", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    print(f"batch {args.batch}, {torch.get_num_threads()} threads; ms (GFLOP/s)")
    print(f"{'conv':>26} | {'luminal stored':>16} | {'luminal window':>16} | "
          f"{'winograd 2':>16} | {'winograd 4':>16} | {'torch':>16} | stored/torch | "
          f"window/torch | winograd 2/torch | winograd 4/torch")
    for cin, cout, side, k, stride in SHAPES:
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(args.batch, cin, side, side, generator=gen)
        w = torch.randn(cout, cin, k, k, generator=gen)
        with torch.no_grad():
            want = torch.nn.functional.conv2d(x, w, stride=stride, padding=k // 2)
            torch_ms = median_ms(lambda: torch.nn.functional.conv2d(x, w, stride=stride,
                                                                    padding=k // 2), args.iters)
        flop = 2.0 * want.numel() * cin * k * k
        row = []
        for schedule in (None, [("window", 1)], [("window", 1), ("winograd", 2)],
                         [("window", 1), ("winograd", 4)]):
            if len(schedule or []) == 2 and k != 3:
                row.append(None)  # Winograd's F(2x2, 3x3) takes 3x3 stride-1 layers only
                continue
            ms, got, windowed, winograd = luminal_conv(x, w, stride, schedule, args.iters)
            assert windowed == (schedule is not None)
            assert winograd == (len(schedule or []) == 2)
            err = np.abs(got - want.numpy()).max() / max(1.0, float(want.abs().max()))
            assert err < 1e-4, f"luminal differs from torch by {err}"
            row.append(ms)
        label = f"{cin}->{cout} {side}x{side} k{k} s{stride}"
        cells = " | ".join(f"{ms:7.2f} ({flop / ms / 1e6:5.0f})" if ms else f"{'-':>16}"
                           for ms in row + [torch_ms])
        ratios = " | ".join(f"{torch_ms / ms:11.2f}x" if ms else f"{'-':>12}" for ms in row)
        print(f"{label:>26} | {cells} | {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
