"""The ``luminal`` command: ``luminal run MODEL_DIR --prompt ...`` generates text with a Llama
model directory, ``luminal embed MODEL_DIR TEXT...`` prints sentence embeddings of a BERT
model and their similarities, ``luminal transcribe MODEL_DIR AUDIO.wav`` prints a Whisper
model's transcript, ``luminal detect IMAGE WEIGHTS`` prints a YOLOv8's boxes and writes an
annotated PNG. Each compiles the model with luminal first, showing progress.
``luminal quantize MODEL_DIR OUT.gguf --type q4_k`` writes a Llama directory as a llama.cpp
GGUF with quantized weights.
Not here: model code (luminal.models)."""

from __future__ import annotations

import argparse
import io
import json
import sys
import threading
import time

from . import runtime as runtime_module
from .errors import LuminalError
from .search.report import StatusLine

# --runtime choice -> the class name luminal exports for it (when the build has it)
_RUNTIMES = {"native": "NativeRuntime", "cpu": "CpuRuntime", "cuda": "CudaRuntime"}
# run's default --search: the cost model's pick, two alternatives and the combination of the
# fastest kernels, timed at the model's step (models.generation.search_dims_of: a decode
# step, or a prefill for a bf16 model with bf16 activations). On a Llama with 2
# of the 1B's 16 layers it adds about 10 s to a 22 s cold compile on 2 cores; a cached
# choice costs nothing.
RUN_SEARCH = 4


def make_runtime(name: str):
    import luminal

    cls = getattr(luminal, _RUNTIMES[name], None) or getattr(runtime_module, _RUNTIMES[name], None)
    if cls is None:
        raise LuminalError(f"--runtime {name}: this luminal build has no {_RUNTIMES[name]} "
                           f"(available: {', '.join(available_runtimes())})")
    return cls()


def available_runtimes():
    import luminal

    return [n for n, c in _RUNTIMES.items() if hasattr(luminal, c)]


def fastest_runtime() -> str:
    """The --runtime a command uses when none is given: cuda where a GPU, its driver and NVRTC
    are present, else cpu (the native interpreter is the reference, never the default)."""
    from .cuda import gpu_available

    if "cuda" in available_runtimes() and gpu_available():
        return "cuda"
    return "cpu"


def chosen_runtime(args):
    """The runtime ``args`` ask for (--runtime, else the fastest available), announced on
    stderr with why it was chosen."""
    name = args.runtime or fastest_runtime()
    why = "--runtime" if args.runtime else "the fastest available; --runtime to override"
    print(f"luminal: runtime {name} ({why})", file=sys.stderr, flush=True)
    return make_runtime(name)


class Progress:
    """A one-line status on stderr with elapsed seconds (on a terminal, a spinner with the step
    of a search running inside: StatusLine)."""

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream or sys.stderr
        self._done = threading.Event()
        self._thread = None

    def __enter__(self):
        self.start = time.perf_counter()
        if self.stream.isatty():
            StatusLine.claimed = True  # a search inside shows its step on this line
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        else:
            print(f"{self.label} ...", file=self.stream, flush=True)
        return self

    def _spin(self):
        frames = "|/-\\"
        i = 0
        while not self._done.wait(0.1):
            elapsed = time.perf_counter() - self.start
            step = f": search {StatusLine.text}" if StatusLine.text else ""
            print(f"\r{frames[i % 4]} {self.label} {elapsed:5.1f}s{step}\033[K", end="",
                  file=self.stream, flush=True)
            i += 1

    def __exit__(self, kind, value, tb):
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            StatusLine.claimed = False
            print("\r\033[K", end="", file=self.stream)  # clear the spinner line
        elapsed = time.perf_counter() - self.start
        status = "done" if kind is None else "failed"
        print(f"{self.label}: {status} in {elapsed:.2f}s", file=self.stream, flush=True)
        return False


def cmd_run(args) -> int:
    from .models.config import read_config
    from .models.decoder_config import FAMILIES
    from .models.generation import CausalLMSession, GenerationStats, Sampler, generate
    from .models.llama import LlamaForCausalLM
    from .models.tokenizer import StreamDecoder, load_gguf_tokenizer, load_tokenizer

    import os

    if os.path.isfile(args.model_dir) and args.model_dir.endswith(".gguf"):
        model = LlamaForCausalLM.from_gguf(args.model_dir, max_context=args.max_context,
                                           activations=args.activations or "q8_0")
        if args.tokenizer:
            tokenizer = load_tokenizer(args.tokenizer)
        else:
            tokenizer = load_gguf_tokenizer(args.model_dir, os.path.dirname(args.model_dir) or ".")
    else:
        kind = read_config(args.model_dir).get("model_type")
        if kind not in FAMILIES:
            raise LuminalError(f"luminal run: {args.model_dir} holds a {kind!r} model; run "
                               f"takes the Llama family (model_type one of "
                               f"{', '.join(sorted(FAMILIES))})")
        tokenizer = load_tokenizer(args.tokenizer or args.model_dir)
        model = LlamaForCausalLM.from_pretrained(args.model_dir, max_context=args.max_context,
                                                 activations=args.activations or "f32")
    prompt = tokenizer.encode(args.prompt).ids
    if not prompt:
        raise LuminalError(f"luminal run: the tokenizer gives no tokens for the prompt "
                           f"{args.prompt!r} (give --prompt text the model's vocabulary "
                           f"covers, or --tokenizer)")
    rt = chosen_runtime(args)
    quiet = False  # a rank of --pp / --tp but the first: every rank decodes, rank 0 prints
    if args.pp > 1 and args.tp > 1:
        raise LuminalError("luminal run: --pp and --tp together are not supported yet")
    if args.pp > 1 or args.tp > 1:
        session = _distributed_session(model, rt, args)
        quiet = session.comm.rank != 0
    else:
        with Progress(f"compiling {_describe_llama(model)} on {type(rt).__name__} "
                      f"(search {args.search})"):
            session = CausalLMSession(model, rt, search=args.search)
    sampler = Sampler(args.temperature, args.top_p, args.seed)
    stats = GenerationStats()
    decoder = StreamDecoder(tokenizer)
    eos = set(model.config.eos_token_id or [])
    if os.path.isdir(args.model_dir):
        eos |= _generation_eos(args.model_dir)
    out = io.StringIO() if quiet else sys.stdout
    out.write(args.prompt)
    for token in generate(session, prompt, args.max_new_tokens, sampler, eos, stats):
        out.write(decoder.push(token))
        out.flush()
    out.write("\n")
    if not quiet:
        print(f"[{stats.prompt_tokens} prompt tokens, {stats.new_tokens} new; time to first "
              f"token {stats.time_to_first_token * 1000:.0f} ms; {stats.tokens_per_second:.1f} "
              f"tokens/s]", file=sys.stderr)
    if args.pp > 1 or args.tp > 1:
        session.comm.close()  # Gloo's threads end before the interpreter's
    return 0


def _distributed_session(model, rt, args):
    """``model`` split over the processes torchrun started (Gloo): by layers (--pp N:
    PipelineSession) or by heads and features (--tp N: TensorParallelSession), compiled on
    ``rt``'s kind of runtime (on the CPU each rank with its share of the cores); each rank's
    part and resident weights said on stderr."""
    import os

    from . import distributed
    from .models.pipeline import PipelineSession
    from .models.tensor_parallel import TensorParallelSession

    flag, n = ("--pp", args.pp) if args.pp > 1 else ("--tp", args.tp)
    comm = distributed.init()
    if comm.world_size != n:
        raise LuminalError(f"luminal run {flag} {n}: torchrun started {comm.world_size} "
                           f"process(es); run it as torchrun --nproc-per-node {n} "
                           f"-m luminal.cli run ...")
    make = type(rt)
    if isinstance(rt, runtime_module.CpuRuntime):  # the ranks share the cores
        threads = max(1, (os.cpu_count() or 1) // n)

        def make():
            return runtime_module.CpuRuntime(threads=threads)
        rt = make()
    if args.pp > 1:
        session = PipelineSession(model, comm, rt, search=args.search)
        part, runtimes = (f"layers {session.layers.start}-{session.layers.stop - 1}",
                          [session.runtime])
    else:
        session = TensorParallelSession(model, comm, make, search=args.search)
        part, runtimes = f"1/{n} of every layer", session.runtimes()
    weights = sum(m["borrowed_input_bytes"] + m["owned_input_bytes"] + m["packed_input_bytes"]
                  for m in (r.memory() for r in runtimes))
    print(f"[rank {comm.rank} of {comm.world_size}: {part}, {weights / 1e6:.1f} MB of "
          f"weights]", file=sys.stderr)
    return session


def _generation_eos(model_dir) -> set:
    """End-of-sequence ids of generation_config.json (instruct models list several)."""
    import os

    from .models.config import read_json

    path = os.path.join(model_dir, "generation_config.json")
    eos = read_json(path).get("eos_token_id") if os.path.exists(path) else None
    if eos is None:
        return set()
    return set(eos) if isinstance(eos, list) else {eos}


_FAMILY_NAMES = {"llama": "Llama", "mistral": "Mistral", "phi3": "Phi-3", "qwen2": "Qwen2",
                 "qwen3": "Qwen3", "gemma": "Gemma", "gemma2": "Gemma 2",
                 "gemma3_text": "Gemma 3"}


def _describe_llama(model) -> str:
    c = model.config
    return (f"{_FAMILY_NAMES.get(c.model_type, c.model_type)} ({c.num_hidden_layers} layers, hidden {c.hidden_size}, "
            f"{c.num_attention_heads}/{c.num_key_value_heads} heads)")


def cmd_embed(args) -> int:
    from .models.bert import SentenceEmbedder
    from .models.config import read_config

    kind = read_config(args.model_dir).get("model_type")
    if kind != "bert":
        raise LuminalError(f"luminal embed: {args.model_dir} holds a {kind!r} model; embed "
                           f"takes BERT models (model_type 'bert')")
    rt = chosen_runtime(args)
    with Progress(f"compiling BERT encoder on {type(rt).__name__} (search {args.search})"):
        embedder = SentenceEmbedder(args.model_dir, rt, search=args.search)
    start = time.perf_counter()
    vectors = embedder.embed(args.texts)
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps({"texts": args.texts, "embeddings": vectors.tolist()}))
        return 0
    print(f"{len(args.texts)} embeddings of dim {vectors.shape[1]} in {elapsed * 1000:.0f} ms")
    for text, v in zip(args.texts, vectors):
        head = " ".join(f"{x:+.3f}" for x in v[:4])
        print(f"  [{head} ...]  {text}")
    if len(args.texts) > 1:
        sims = vectors @ vectors.T
        print("cosine similarity:")
        width = max(len(t) for t in _short(args.texts))
        for text, row in zip(_short(args.texts), sims):
            print(f"  {text:<{width}}  " + " ".join(f"{x:5.2f}" for x in row))
    return 0


def cmd_transcribe(args) -> int:
    from .models.audio import SAMPLE_RATE, load_wav
    from .models.config import read_config
    from .models.tokenizer import load_tokenizer
    from .models.whisper import WhisperForConditionalGeneration, WhisperSession

    kind = read_config(args.model_dir).get("model_type")
    if kind != "whisper":
        raise LuminalError(f"luminal transcribe: {args.model_dir} holds a {kind!r} model; "
                           f"transcribe takes Whisper models (model_type 'whisper')")
    audio = load_wav(args.audio)
    tokenizer = load_tokenizer(args.model_dir)
    model = WhisperForConditionalGeneration.from_pretrained(args.model_dir)
    c = model.config
    rt = chosen_runtime(args)
    with Progress(f"compiling Whisper ({c.encoder_layers}+{c.decoder_layers} layers, d_model "
                  f"{c.d_model}) on {type(rt).__name__} (search {args.search})"):
        session = WhisperSession(model, rt, search=args.search)
    start = time.perf_counter()
    tokens = session.transcribe(audio, args.model_dir, args.language, args.task,
                                args.max_new_tokens)
    elapsed = time.perf_counter() - start
    print(tokenizer.decode(tokens, skip_special_tokens=True).strip())
    print(f"[{len(audio) / SAMPLE_RATE:.1f} s of audio, {len(tokens)} tokens in "
          f"{elapsed * 1000:.0f} ms]", file=sys.stderr)
    return 0


def cmd_detect(args) -> int:
    import os

    from .models.detection import class_name, draw_detections, letterbox, load_image
    from .models.yolo import YOLODetector, YOLOv8

    if args.imgsz < 32 or args.imgsz % 32:
        raise ValueError(f"--imgsz {args.imgsz}: must be a positive multiple of 32")
    image = load_image(args.image)
    model = YOLOv8.from_file(args.weights)
    c = model.config
    rt = chosen_runtime(args)
    detector = YOLODetector(model, rt, search=args.search, imgsz=args.imgsz)
    h, w = letterbox(image, args.imgsz)[0].shape[:2]
    with Progress(f"compiling YOLOv8 (width {c.width}, depth {c.depth}, {c.nc} classes) at "
                  f"{w}x{h} on {type(rt).__name__} (search {args.search})"):
        detector.program(h, w)
    start = time.perf_counter()
    dets = detector.detect(image, args.conf, args.iou, args.max_det)
    elapsed = time.perf_counter() - start
    if model.random_weights:
        print(f"luminal: note: {args.weights} holds random weights (its metadata says so): "
              f"the boxes mean nothing", file=sys.stderr)
    if len(dets):
        print(f"{'class':<16} {'score':>6} {'x1':>8} {'y1':>8} {'x2':>8} {'y2':>8}")
    for x1, y1, x2, y2, score, cls in dets:
        print(f"{class_name(c.names, int(cls)):<16} {score:6.3f} {x1:8.1f} {y1:8.1f} "
              f"{x2:8.1f} {y2:8.1f}")
    if not len(dets):
        print(f"no box scored over --conf {args.conf} (random or untrained weights give none, "
              f"or meaningless ones)")
    out = args.out or os.path.splitext(args.image)[0] + ".detected.png"
    draw_detections(image, dets, c.names, out)
    print(f"[{len(dets)} boxes in {image.shape[1]}x{image.shape[0]}, run at {w}x{h} in "
          f"{elapsed * 1000:.0f} ms; annotated image: {out}]", file=sys.stderr)
    return 0


def cmd_quantize(args) -> int:
    from .models.llama_to_gguf import write_llama_gguf

    with Progress(f"writing {args.out} ({args.type})"):
        write_llama_gguf(args.model_dir, args.out, args.type)
    return 0


def _short(texts, n: int = 32):
    return [t if len(t) <= n else t[:n - 3] + "..." for t in texts]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="luminal", description="Run models compiled by luminal.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp, search: int):
        sp.add_argument("model_dir", help="a Hugging Face model directory (config.json, "
                                          "*.safetensors, tokenizer.json); run also takes a "
                                          "llama .gguf file")
        runtime_options(sp, search)

    def runtime_options(sp, search: int):
        sp.add_argument("--runtime", choices=sorted(_RUNTIMES), default=None,
                        help="where to run (default: cuda with a GPU, else cpu; native is the "
                             "reference interpreter)")
        sp.add_argument("--search", type=int, default=search, metavar="N",
                        help=f"candidate programs to time while compiling, 1 for the cost "
                             f"model's pick untimed (default: {search}; the choice is cached)")

    run = sub.add_parser("run", help="generate text with a Llama-family model (model_type "
                         "llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gemma3_text)")
    common(run, RUN_SEARCH)
    run.add_argument("--prompt", required=True)
    run.add_argument("--tokenizer", metavar="DIR",
                     help="directory of tokenizer.json (default: the model's directory; for "
                          "a .gguf file, the tokenizer in its metadata, else the one beside it)")
    run.add_argument("--max-new-tokens", type=int, default=32)
    run.add_argument("--temperature", type=float, default=0.0, help="0 is greedy (default)")
    run.add_argument("--top-p", type=float, default=1.0)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--activations", choices=["q8_0", "bf16", "f32"], default=None,
                     help="a .gguf file's quantized matrices multiply the Q8_0 round trip of "
                          "their inputs, as llama.cpp (q8_0, the default for .gguf: int8 dot "
                          "products on the CPU); a model directory's bf16 matrices their inputs "
                          "rounded to bf16, as transformers' bf16 model (bf16: bf16 dot "
                          "products on a CPU with AVX512-BF16); or the f32 inputs as they are "
                          "(f32, the default for a model directory)")
    run.add_argument("--pp", type=int, default=1, metavar="N",
                     help="split the layers over N processes (pipeline parallelism); run "
                          "under torchrun --nproc-per-node N")
    run.add_argument("--tp", type=int, default=1, metavar="N",
                     help="split every layer's heads and features over N processes (tensor "
                          "parallelism); run under torchrun --nproc-per-node N")
    run.add_argument("--max-context", type=int, default=4096,
                     help="longest prompt + generation the KV cache holds (default: 4096)")
    run.set_defaults(func=cmd_run)

    embed = sub.add_parser("embed", help="sentence embeddings with a BERT model")
    common(embed, 1)
    embed.add_argument("texts", nargs="+")
    embed.add_argument("--json", action="store_true", help="print the full vectors as JSON")
    embed.set_defaults(func=cmd_embed)

    transcribe = sub.add_parser("transcribe", help="speech to text with a Whisper model")
    common(transcribe, 1)
    transcribe.add_argument("audio", help="a PCM .wav file (any rate; resampled to 16 kHz)")
    transcribe.add_argument("--language", default=None,
                            help="spoken language code, e.g. en (default: detected)")
    transcribe.add_argument("--task", choices=["transcribe", "translate"], default="transcribe")
    transcribe.add_argument("--max-new-tokens", type=int, default=128,
                            help="per 30 s window (default: 128)")
    transcribe.set_defaults(func=cmd_transcribe)

    detect = sub.add_parser("detect", help="object detection with a YOLOv8 model")
    detect.add_argument("image", help="an image file (PNG, JPEG, ... as Pillow reads them)")
    detect.add_argument("weights", help="an ultralytics YOLOv8 .pt checkpoint, or a "
                                        ".safetensors state dict whose metadata (or a .json "
                                        "beside it) gives scale and nc")
    runtime_options(detect, 1)
    detect.add_argument("--conf", type=float, default=0.25,
                        help="smallest class score kept (default: 0.25)")
    detect.add_argument("--iou", type=float, default=0.7,
                        help="IoU over which NMS drops the lower-scored box (default: 0.7)")
    detect.add_argument("--imgsz", type=int, default=640,
                        help="longest side of the model input, a multiple of 32 (default: 640)")
    detect.add_argument("--max-det", type=int, default=300, help="boxes kept at most")
    detect.add_argument("--out", metavar="PNG",
                        help="annotated image to write (default: IMAGE.detected.png beside it)")
    detect.set_defaults(func=cmd_detect)

    quant = sub.add_parser("quantize", help="write a Llama directory as a quantized GGUF")
    quant.add_argument("model_dir", help="a Hugging Face Llama directory")
    quant.add_argument("out", help="the .gguf file to write")
    quant.add_argument("--type", default="q8_0",
                       choices=["q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "f16"],
                       help="the 2-D weights' type (default: q8_0)")
    quant.set_defaults(func=cmd_quantize, search=1)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.search < 1:
        print("luminal: --search must be at least 1", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (LuminalError, ImportError, ValueError) as e:
        print(f"luminal: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
