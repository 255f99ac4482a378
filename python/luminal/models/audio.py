"""Audio in as Whisper reads it: a WAV file's samples (16-bit, 24-bit or 32-bit PCM, any
channel count, resampled to 16 kHz) and their log-mel spectrogram (Whisper's feature
extractor: 30 s windows, a 400-point Hann STFT every 160 samples, Slaney mel filters, log10
clamped to 8 below the maximum). numpy only; not here: the model (whisper.py)."""

from __future__ import annotations

import wave

import numpy as np

from ..errors import WeightsError

SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
CHUNK_SECONDS = 30


def load_wav(path) -> np.ndarray:
    """The samples of a PCM WAV file as float32 in [-1, 1], mono (channels averaged), at
    16 kHz (linear interpolation from other rates)."""
    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as e:
        raise WeightsError(f"{path}: not a PCM WAV file ({e})") from None
    except OSError as e:
        raise WeightsError(f"{path}: cannot read the audio file ({e.strerror})") from None
    if width == 2:
        samples = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 4:
        samples = np.frombuffer(raw, "<i4").astype(np.float32) / 2147483648.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        value = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        samples = (value - ((value & 0x800000) << 1)).astype(np.float32) / 8388608.0
    else:
        raise WeightsError(f"{path}: {8 * width}-bit WAV samples are not supported (16, 24 "
                           f"or 32-bit PCM are)")
    samples = samples[:len(samples) // channels * channels].reshape(-1, channels).mean(axis=1)
    if rate != SAMPLE_RATE and len(samples):
        at = np.arange(0, len(samples) * SAMPLE_RATE // rate) * (rate / SAMPLE_RATE)
        samples = np.interp(at, np.arange(len(samples)), samples)
    return samples.astype(np.float32)


def _hz_to_mel(f):
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    f = np.asarray(f, np.float64)
    log_part = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) * (27.0 / np.log(6.4))
    return np.where(f < 1000.0, 3.0 * f / 200.0, log_part)


def _mel_to_hz(m):
    m = np.asarray(m, np.float64)
    return np.where(m < 15.0, 200.0 * m / 3.0, 1000.0 * np.exp(np.log(6.4) * (m - 15.0) / 27.0))


def mel_filters(n_mels: int, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """(n_fft // 2 + 1, n_mels) triangular filters, area-normalized (Slaney)."""
    fft_freqs = np.linspace(0, sample_rate // 2, n_fft // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sample_rate / 2), n_mels + 2))
    widths = np.diff(edges)
    slopes = edges[None, :] - fft_freqs[:, None]
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(down, up))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[None, :]


def log_mel_spectrogram(audio, n_mels: int = 80) -> np.ndarray:
    """(n_mels, 3000) float32 features of one 30 s window of 16 kHz ``audio`` (zero-padded or
    cut to 30 s), as Whisper's feature extractor computes them."""
    audio = np.asarray(audio, np.float64).reshape(-1)
    length = CHUNK_SECONDS * SAMPLE_RATE
    audio = np.pad(audio[:length], (0, max(0, length - len(audio))))
    padded = np.pad(audio, N_FFT // 2, mode="reflect")
    frames = 1 + (len(padded) - N_FFT) // HOP_LENGTH
    index = np.arange(N_FFT)[None, :] + HOP_LENGTH * np.arange(frames)[:, None]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann
    power = np.abs(np.fft.rfft(padded[index] * window, axis=1)) ** 2  # (frames, bins)
    mel = (power @ mel_filters(n_mels)).T[:, :-1]  # the last frame is dropped, as Whisper does
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).astype(np.float32)
