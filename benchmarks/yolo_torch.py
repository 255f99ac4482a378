"""The PyTorch side of benchmarks/models.py's YOLOv8 row: ultralytics' own DetectionModel
(from yolov8{scale}.yaml) in eager mode with the weights luminal ran, on the same input. It
runs in a venv that has ultralytics (which replaces the project's pinned torch, so never in
the project's venv) and serves timed forwards over stdin/stdout, so that the caller can
interleave them with its own on a noisy machine:

    ULVENV/bin/python benchmarks/yolo_torch.py WEIGHTS.safetensors INPUT.npy OUT.npy \\
        --scale s --threads 2

It saves the output to OUT.npy, prints "ready", then answers each line "eager" or "fused"
(BatchNorm folded into the convs by ultralytics' fuse(), as its predictor runs) with the
seconds of one forward, and stops at end of input."""

import argparse
import os
import sys
import time

os.environ.setdefault("YOLO_OFFLINE", "1")

import copy  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from ultralytics.nn.tasks import DetectionModel  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("weights")
    p.add_argument("input")
    p.add_argument("out")
    p.add_argument("--scale", default="s")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model = DetectionModel(f"yolov8{args.scale}.yaml", nc=80, verbose=False)
    state = model.state_dict()
    weights = load_file(args.weights)
    missing = [k for k in state if k not in weights and not k.endswith("num_batches_tracked")]
    if missing:
        raise SystemExit(f"yolo_torch: {args.weights} lacks {missing[:4]}")
    state.update({k: torch.from_numpy(v) for k, v in weights.items()})
    model.load_state_dict(state)
    models = {"eager": model.eval()}
    models["fused"] = copy.deepcopy(model).fuse(verbose=False).eval()
    x = torch.from_numpy(np.load(args.input))
    with torch.inference_mode():
        np.save(args.out, models["eager"](x)[0].numpy())
        models["fused"](x)  # warm-up
        print(f"ready torch {torch.__version__} threads {torch.get_num_threads()}", flush=True)
        for line in sys.stdin:
            start = time.perf_counter()
            models[line.strip()](x)
            print(time.perf_counter() - start, flush=True)


if __name__ == "__main__":
    main()
