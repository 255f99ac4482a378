"""Whisper at real size, luminal against PyTorch eager (transformers) in the same run: a
random model of whisper-tiny/base/small's shape, one 30 s window of noise. Reports the time
per window of the encoder and the decoder layers' cross-attention keys and values from its
output (WhisperSession.encode computes both; transformers computes the second at the first
decode step: here it is timed with the encoder, the same work on both sides), decode tokens/s
over a fixed number of greedy steps (the KV cache on both sides), compile time, and whether
the greedy tokens agree.

    python benchmarks/whisper.py [--size base] [--runtime cpu] [--tokens 32] [--repeats 3]
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from luminal.cli import make_runtime  # noqa: E402
from models import median_time  # noqa: E402  (benchmarks/models.py)
from luminal.models.audio import log_mel_spectrogram  # noqa: E402
from luminal.models.whisper import WhisperForConditionalGeneration, WhisperSession  # noqa: E402

transformers.utils.logging.disable_progress_bar()
transformers.utils.logging.set_verbosity_error()

# d_model, layers (encoder = decoder), heads: the published checkpoints' shapes
SIZES = {"tiny": (384, 4, 6), "base": (512, 6, 8), "small": (768, 12, 12)}


def random_whisper(path, size):
    d, layers, heads = SIZES[size]
    torch.manual_seed(0)
    config = transformers.WhisperConfig(
        vocab_size=51865, num_mel_bins=80, d_model=d, encoder_layers=layers,
        decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d, decoder_start_token_id=50258,
        eos_token_id=50257, pad_token_id=50257, bos_token_id=50257)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    model.save_pretrained(path)
    return model


def torch_greedy(hf, features, start, tokens):
    """Greedy decoding with transformers' KV cache; returns (ids, seconds of the decode
    steps after the first)."""
    with torch.no_grad():
        enc = hf.model.encoder(torch.from_numpy(features)).last_hidden_state
        out = hf(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([[start]]),
                 use_cache=True)
        ids = [int(out.logits[0, -1].argmax())]
        past = out.past_key_values
        begin = time.perf_counter()
        for _ in range(tokens - 1):
            out = hf(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([[ids[-1]]]),
                     past_key_values=past, use_cache=True)
            past = out.past_key_values
            ids.append(int(out.logits[0, -1].argmax()))
    return ids, time.perf_counter() - begin


def torch_encode(hf, features):
    """transformers' encoder on a window, then each decoder layer's cross-attention keys and
    values from its output, as its attention computes them at the first decode step."""
    with torch.no_grad():
        enc = hf.model.encoder(torch.from_numpy(features)).last_hidden_state
        cross = []
        for layer in hf.model.decoder.layers:
            att = layer.encoder_attn
            shape = (enc.shape[0], -1, att.num_heads, att.head_dim)
            cross.append(tuple(proj(enc).view(shape).transpose(1, 2).contiguous()
                               for proj in (att.k_proj, att.v_proj)))
    return enc, cross


def luminal_greedy(session, start, tokens):
    session.reset()
    ids = [int(session.step(np.array([[start]], np.int32))[0, -1].argmax())]
    begin = time.perf_counter()
    for _ in range(tokens - 1):
        ids.append(int(session.step(np.array([[ids[-1]]], np.int32))[0, -1].argmax()))
    return ids, time.perf_counter() - begin


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="base")
    p.add_argument("--runtime", default="cpu")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--search", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(os.cpu_count())
    audio = 0.1 * np.random.default_rng(0).standard_normal(16000 * 30)
    features = log_mel_spectrogram(audio, 80)[None]
    with tempfile.TemporaryDirectory() as path:
        hf = random_whisper(path, args.size)
        start = time.perf_counter()
        model = WhisperForConditionalGeneration.from_pretrained(path)
        session = WhisperSession(model, make_runtime(args.runtime), search=args.search)
        compile_s = time.perf_counter() - start
        sot = model.config.decoder_start_token_id

        ours_enc = median_time(lambda: session.encode(features), args.repeats)
        torch_enc = median_time(lambda: torch_encode(hf, features), args.repeats)
        ours_ids, ours_s = luminal_greedy(session, sot, args.tokens)
        torch_ids, torch_s = torch_greedy(hf, features, sot, args.tokens)
    steps = args.tokens - 1
    print(f"whisper-{args.size} shape ({SIZES[args.size]}), {args.runtime}, "
          f"{os.cpu_count()} threads, compile {compile_s:.1f} s")
    print(f"{'':24}{'luminal':>12}{'torch eager':>14}{'ratio':>8}")
    print(f"{'encoder+cross kv ms':24}{ours_enc * 1e3:12.0f}{torch_enc * 1e3:14.0f}"
          f"{torch_enc / ours_enc:7.2f}x")
    print(f"{'decode tok/s':24}{steps / ours_s:12.1f}{steps / torch_s:14.1f}"
          f"{torch_s / ours_s:7.2f}x")
    same = sum(a == b for a, b in zip(ours_ids, torch_ids))
    print(f"greedy tokens equal: {same}/{args.tokens}")
    return 0 if same == args.tokens else 1


if __name__ == "__main__":
    sys.exit(main())
