"""The PyTorch side of benchmarks/models.py's YOLOv8 row: ultralytics' own DetectionModel
(from yolov8{scale}.yaml) in eager mode with the weights luminal ran, timed on zeros-free
input. Runs in a venv that has ultralytics (it replaces the project's pinned torch, so never
in the project's venv); prints one JSON line: median seconds per image and the output.

    ULVENV/bin/python benchmarks/yolo_torch.py WEIGHTS.safetensors INPUT.npy OUT.npy \\
        --scale s --threads 2 --repeats 5
"""

import argparse
import json
import os
import time

os.environ.setdefault("YOLO_OFFLINE", "1")

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
    p.add_argument("--repeats", type=int, default=5)
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
    model.eval()
    x = torch.from_numpy(np.load(args.input))
    times = []
    with torch.inference_mode():
        out = model(x)[0]  # warm-up
        for _ in range(args.repeats):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    np.save(args.out, out.numpy())
    print(json.dumps({"seconds": float(np.median(times)), "threads": torch.get_num_threads(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
