"""Whisper against Hugging Face transformers: a tiny random WhisperForConditionalGeneration
saved with save_pretrained, its decoder logits over a prompt, greedy decoding step by step
through the KV caches, and the log-mel features against WhisperFeatureExtractor."""

import wave

import numpy as np
import pytest

import luminal as lm
from luminal.errors import ShapeError, WeightsError
from luminal.models.audio import load_wav, log_mel_spectrogram
from luminal.models.whisper import (WhisperConfig, WhisperForConditionalGeneration,
                                    WhisperSession)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

RUNTIMES = ["NativeRuntime"] + (["CpuRuntime"] if hasattr(lm, "CpuRuntime") else [])


def random_whisper(path, seed, layers, source_positions):
    """A random transformers Whisper (vocab 96, 16 mel bins, d_model 32) saved in ``path``."""
    torch.manual_seed(seed)
    config = transformers.WhisperConfig(
        vocab_size=96, num_mel_bins=16, d_model=32, encoder_layers=layers,
        encoder_attention_heads=4, decoder_layers=layers, decoder_attention_heads=4,
        encoder_ffn_dim=64, decoder_ffn_dim=48, max_source_positions=source_positions,
        max_target_positions=24, decoder_start_token_id=1, eos_token_id=2, pad_token_id=0,
        bos_token_id=1)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    model.save_pretrained(str(path))
    return model


@pytest.fixture(scope="module")
def tiny_whisper(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_whisper")
    return path, random_whisper(path, 0, 2, 30)


def _features(seed=0, mels=16, frames=60):
    return np.random.default_rng(seed).standard_normal((1, mels, frames)).astype(np.float32)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_decoder_logits_match_transformers(tiny_whisper, runtime):
    path, hf = tiny_whisper
    features = _features()
    prompt = [1, 5, 17, 40, 3]
    with torch.no_grad():
        want = hf(input_features=torch.from_numpy(features),
                  decoder_input_ids=torch.tensor([prompt])).logits.numpy()
    session = WhisperSession(WhisperForConditionalGeneration.from_pretrained(path),
                             getattr(lm, runtime)())
    session.encode(features)
    # the prompt in two chunks: the second reads the first's rows from the KV caches
    session.step(np.array([prompt[:2]], np.int32))
    got = session.step(np.array([prompt[2:]], np.int32))
    np.testing.assert_allclose(got[0, -1], want[0, -1], rtol=1e-4, atol=1e-4)
    assert session.past == len(prompt)


def _hf_greedy(hf, features, start, steps, eos):
    ids = [start]
    with torch.no_grad():
        for _ in range(steps):
            logits = hf(input_features=torch.from_numpy(features),
                        decoder_input_ids=torch.tensor([ids])).logits[0, -1]
            token = int(torch.argmax(logits))
            if token == eos:
                break
            ids.append(token)
    return ids[1:]


def test_greedy_decoding_matches_transformers(tiny_whisper):
    path, hf = tiny_whisper
    runtime = getattr(lm, RUNTIMES[-1])()
    session = WhisperSession(WhisperForConditionalGeneration.from_pretrained(path), runtime)
    for seed in (1, 2):
        features = _features(seed)
        want = _hf_greedy(hf, features, 1, 12, 2)
        assert session.generate(features, max_new_tokens=12) == want


def test_encode_and_step_refuse_bad_input(tiny_whisper):
    path, _ = tiny_whisper
    session = WhisperSession(WhisperForConditionalGeneration.from_pretrained(path))
    with pytest.raises(ShapeError, match="features must be"):
        session.encode(np.zeros((1, 16, 59), np.float32))
    session.encode(_features())
    with pytest.raises(ShapeError, match="out of range"):
        session.step(np.array([[1, 96]], np.int32))
    with pytest.raises(ShapeError, match="exceed"):
        session.step(np.ones((1, 25), np.int32))


def test_a_bad_config_names_the_key():
    good = dict(vocab_size=96, num_mel_bins=16, d_model=32, encoder_layers=2,
                encoder_attention_heads=4, encoder_ffn_dim=64, decoder_layers=2,
                decoder_attention_heads=4, decoder_ffn_dim=48)
    assert WhisperConfig.from_dict(good).input_frames == 3000
    with pytest.raises(WeightsError, match="decoder_attention_heads"):
        WhisperConfig.from_dict({**good, "decoder_attention_heads": 5})
    with pytest.raises(WeightsError, match="'d_model'"):
        WhisperConfig.from_dict({**good, "d_model": 0})


@pytest.mark.parametrize("mels", [80, 128])
def test_log_mel_matches_the_feature_extractor(mels):
    rng = np.random.default_rng(0)
    t = np.arange(16000 * 3) / 16000
    audio = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(t.size))
    extractor = transformers.WhisperFeatureExtractor(feature_size=mels)
    want = extractor(audio.astype(np.float32), sampling_rate=16000,
                     return_tensors="np").input_features[0]
    got = log_mel_spectrogram(audio, mels)
    assert got.shape == want.shape == (mels, 3000)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-4)


def test_wav_reading_resamples_to_16k(tmp_path):
    rate = 8000
    t = np.arange(rate) / rate
    tone = (0.5 * np.sin(2 * np.pi * 200 * t) * 32767).astype("<i2")
    path = tmp_path / "tone.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.repeat(tone, 2).tobytes())  # the same tone in both channels
    got = load_wav(path)
    assert got.shape == (16000,)
    want = 0.5 * np.sin(2 * np.pi * 200 * np.arange(16000) / 16000)
    # the last sample lies past the source's last one: interpolation holds that one
    np.testing.assert_allclose(got[:-1], want[:-1], atol=2e-3)
    (tmp_path / "bad.wav").write_bytes(b"RIFF0000WAVEjunk")
    with pytest.raises(WeightsError, match="not a PCM WAV"):
        load_wav(tmp_path / "bad.wav")


@pytest.fixture(scope="module")
def whisper_dir(tmp_path_factory):
    """A random 1+1-layer Whisper with full 30 s windows (1500 positions) and a word-level
    tokenizer of its 96 ids."""
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path_factory.mktemp("whisper_1500")
    model = random_whisper(path, 1, 1, 1500)
    vocab = {"<pad>": 0, "<|startoftranscript|>": 1, "<|endoftext|>": 2}
    vocab.update({f"w{i}": i for i in range(3, 96)})
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.decoder = tokenizers.decoders.WordPiece()
    tok.add_special_tokens(["<pad>", "<|startoftranscript|>", "<|endoftext|>"])
    tok.save(str(path / "tokenizer.json"))
    return path, model, tok


def test_the_cli_transcribes_a_wav_file(whisper_dir, tmp_path, capsys):
    from luminal.cli import main

    path, hf, tok = whisper_dir
    rng = np.random.default_rng(3)
    audio = (0.2 * rng.standard_normal(16000 * 2)).astype(np.float32)
    wav = tmp_path / "speech.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((audio * 32767).astype("<i2").tobytes())
    features = transformers.WhisperFeatureExtractor(feature_size=16)(
        load_wav(wav), sampling_rate=16000, return_tensors="np").input_features
    want = tok.decode(_hf_greedy(hf, features, 1, 20, 2), skip_special_tokens=True).strip()
    assert main(["transcribe", str(path), str(wav), "--max-new-tokens", "20"]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == want
    assert "2.0 s of audio" in out.err
    assert main(["transcribe", str(path), str(tmp_path / "missing.wav")]) == 1
    assert "luminal: error:" in capsys.readouterr().err
