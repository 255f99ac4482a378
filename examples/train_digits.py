"""Trains a classifier on scikit-learn's bundled 8x8 digits (no download) with one compiled
train step (forward, cross-entropy, backward, Adam) and reports test accuracy.

    python examples/train_digits.py            # the MLP, >= 97% test accuracy
    python examples/train_digits.py --model cnn
    python examples/train_digits.py --runtime native --epochs 5

A loss curve is written to digits_loss.png when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import luminal as lm
import luminal.nn.functional as F
from luminal import optim
from luminal.nn import Conv2d, Dropout, Linear, Module
from luminal.training.train import TrainStep


class MLP(Module):
    def __init__(self, hidden: int = 128):
        super().__init__()
        self.fc1 = Linear(64, hidden)
        self.drop = Dropout(0.1)
        self.fc2 = Linear(hidden, 10)

    def forward(self, x):  # (batch, 64) -> (batch, 10)
        return self.fc2(self.drop(self.fc1(x).relu()))


class CNN(Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = Conv2d(1, channels, 3, padding=1)
        self.fc1 = Linear(channels * 16, 64)
        self.fc2 = Linear(64, 10)

    def forward(self, x):  # (batch, 64) -> (batch, 10)
        b = x.shape[0]
        h = self.conv(x.reshape(b, 1, 8, 8)).relu()  # (batch, channels, 8, 8)
        # 2x2 max pooling as a view and a max: its gradient is views too (F.max_pool2d's
        # windows are a Gather, whose gradient is a one-hot scatter over the whole input)
        h = h.reshape(b, -1, 4, 2, 4, 2).amax((3, 5)).reshape(b, -1)  # (batch, channels * 16)
        return self.fc2(self.fc1(h).relu())


def load_digits(seed: int):
    from sklearn.datasets import load_digits as sklearn_digits

    data = sklearn_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    split = int(len(x) * 0.8)
    train, test = order[:split], order[split:]
    return x[train], y[train], x[test], y[test]


def accuracy(model, weights, x_test, y_test, runtime) -> float:
    """The trained weights in a forward-only graph (eval mode) over the whole test set."""
    model.eval()
    cx = lm.Graph()
    x = cx.tensor((len(x_test), 64))
    predicted = model(x).argmax(-1).output()
    rt = cx.search(runtime, 1)
    model.load_state_dict(rt, weights)
    rt.set_data(x, x_test)
    rt.execute()
    model.train()
    return float((rt.get(predicted) == y_test).mean())


def progress(epoch: int, epochs: int, done: int, total: int, loss: float, seconds: float):
    width = 24
    filled = int(width * done / total)
    bar = "#" * filled + "." * (width - filled)
    sys.stderr.write(f"\repoch {epoch + 1:3d}/{epochs} [{bar}] loss {loss:.4f} "
                     f"({seconds:.1f} s)")
    sys.stderr.flush()


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--runtime", choices=("cpu", "native"), default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    make_runtime = lm.CpuRuntime if args.runtime == "cpu" else lm.NativeRuntime
    x_train, y_train, x_test, y_test = load_digits(args.seed)
    model = MLP() if args.model == "mlp" else CNN()
    cx = lm.Graph()
    x = cx.tensor((args.batch, 64), name="x")
    y = cx.tensor((args.batch,), lm.int32, name="y")
    loss = F.cross_entropy(model(x), y)
    steps_per_epoch = len(x_train) // args.batch
    schedule = optim.lr_scheduler.CosineAnnealingLR(args.lr, args.epochs * steps_per_epoch)
    opt = optim.AdamW(model.parameters(), lr=schedule, weight_decay=1e-4)
    start = time.perf_counter()
    step = TrainStep(model, loss, opt, make_runtime(), seed=args.seed)
    print(f"compiled the train step in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    rng = np.random.default_rng(args.seed)
    curve = []
    running = None
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_train))
        for i in range(steps_per_epoch):
            batch = order[i * args.batch:(i + 1) * args.batch]
            value = step.run({x: x_train[batch], y: y_train[batch]})
            running = value if running is None else 0.95 * running + 0.05 * value
            curve.append(value)
            if i % 8 == 7 or i == steps_per_epoch - 1:
                progress(epoch, args.epochs, i + 1, steps_per_epoch, running,
                         time.perf_counter() - start)
    sys.stderr.write("\n")
    result = accuracy(model, step.state_dict(), x_test, y_test, make_runtime())
    print(f"{args.model}: test accuracy {result * 100:.2f}% ({len(x_test)} digits, "
          f"{args.epochs} epochs, {time.perf_counter() - start:.1f} s)")
    _plot(curve, "digits_loss.png")
    return result


def _plot(curve, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    plt.figure(figsize=(6, 3))
    plt.plot(curve)
    plt.xlabel("step")
    plt.ylabel("loss")
    plt.yscale("log")
    plt.tight_layout()
    plt.savefig(path)
    print(f"loss curve: {path}")


if __name__ == "__main__":
    main()
