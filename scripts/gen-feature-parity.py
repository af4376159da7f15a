#!/usr/bin/python3
"""Writes tests/data/features/extra/*.safetensors: torchaudio references for the Kaldi fbank /
MFCC and MelSpectrogram options the shared golden cases leave at their defaults (and
MelSpectrogram's defaults themselves), and 22.05 kHz
cases (a vocoder's front end) with their input as a 16-bit WAV for the CLI tests.

Each file holds `input` (float32 samples, already scaled as passed), `expected` (the reference
output) and metadata `function` (the torchaudio call) and `options` (its keyword arguments as
JSON). Run with Debian's python (torch 1.13, torchaudio 0.13):
    /usr/bin/python3 scripts/gen-feature-parity.py
"""
import json
import os
import struct
import wave

import numpy as np
import torch
import torchaudio

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "features", "extra")


def read_input(case):
    with open(os.path.join(ROOT, "tests", "data", "features", case + ".safetensors"), "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    begin, end = header["input"]["data_offsets"]
    return torch.from_numpy(np.frombuffer(data[8 + n + begin:8 + n + end], dtype=np.float32).copy())


def write(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    os.makedirs(OUT, exist_ok=True)
    speech = read_input("kaldi_fbank80__speech_4s")[:24000] * 32768
    noise = read_input("kaldi_fbank80_int16scale_nosnip__noise_1s") * 32768
    kaldi = {
        "fbank_hamming": ("fbank", speech, dict(num_mel_bins=40, window_type="hamming")),
        "fbank_hanning": ("fbank", speech, dict(num_mel_bins=40, window_type="hanning")),
        "fbank_blackman": ("fbank", speech, dict(num_mel_bins=40, window_type="blackman",
                                                 blackman_coeff=0.4)),
        "fbank_rectangular": ("fbank", noise, dict(num_mel_bins=40, window_type="rectangular")),
        "fbank_energy": ("fbank", speech, dict(num_mel_bins=40, use_energy=True)),
        "fbank_energy_htk": ("fbank", speech, dict(num_mel_bins=40, use_energy=True,
                                                   htk_compat=True, raw_energy=False,
                                                   energy_floor=0.0)),
        "fbank_magnitude_linear": ("fbank", noise, dict(num_mel_bins=40, use_power=False,
                                                        use_log_fbank=False)),
        "fbank_frames_freqs": ("fbank", speech, dict(num_mel_bins=30, frame_length=20.0,
                                                     frame_shift=5.0, low_freq=64.0,
                                                     high_freq=-400.0, snip_edges=False)),
        "fbank_plain": ("fbank", noise, dict(num_mel_bins=40, round_to_power_of_two=False,
                                             preemphasis_coefficient=0.0,
                                             remove_dc_offset=False, subtract_mean=True)),
        "fbank_dither": ("fbank", speech, dict(num_mel_bins=40, dither=1.0)),
        "mfcc_energy": ("mfcc", speech, dict(num_mel_bins=40, num_ceps=20, use_energy=True)),
        "mfcc_htk": ("mfcc", speech, dict(num_mel_bins=23, htk_compat=True,
                                          cepstral_lifter=0.0)),
        "mfcc_htk_energy": ("mfcc", noise, dict(num_mel_bins=23, htk_compat=True,
                                                use_energy=True, snip_edges=False)),
    }
    for name, (function, x, options) in kaldi.items():
        torch.manual_seed(0)  # alto's dither_seed 0 draws the same noise
        y = getattr(torchaudio.compliance.kaldi, function)(x[None], **options)
        write(os.path.join(OUT, name + ".safetensors"), {"input": x, "expected": y},
              {"function": "torchaudio.compliance.kaldi." + function,
               "options": json.dumps(options), "torchaudio_version": torchaudio.__version__})
    chirp = read_input("melspec_htk_nonorm__chirp_1s")
    mel = {
        "melspec_power1_nocenter": dict(n_fft=512, win_length=300, hop_length=128, n_mels=64,
                                        power=1.0, center=False),
        "melspec_constant_normalized": dict(n_fft=400, hop_length=100, n_mels=40, f_min=50.0,
                                            f_max=7000.0, pad_mode="constant",
                                            normalized=True, norm="slaney", mel_scale="slaney"),
    }
    # torchaudio's defaults (n_mels=128 over n_fft=400 leaves filters empty: it warns and runs).
    mel["melspec_defaults"] = dict()
    for name, options in mel.items():
        y = torchaudio.transforms.MelSpectrogram(sample_rate=16000, **options)(chirp)
        write(os.path.join(OUT, name + ".safetensors"), {"input": chirp, "expected": y},
              {"function": "torchaudio.transforms.MelSpectrogram",
               "options": json.dumps(options), "torchaudio_version": torchaudio.__version__})
    # 22.05 kHz: a chirp plus noise on the int16 grid, so the WAV holds it exactly.
    rate = 22050
    t = torch.arange(rate, dtype=torch.float64) / rate
    generator = torch.Generator().manual_seed(22050)
    signal = 0.4 * torch.sin(2 * np.pi * (200 * t + 3000 * t * t)) + \
        0.05 * torch.randn(rate, generator=generator, dtype=torch.float64)
    pcm = torch.round(signal.clamp(-1, 1) * 32767).to(torch.int16)
    x = (pcm.to(torch.float32) / 32768)
    with wave.open(os.path.join(OUT, "chirp_22050.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.numpy().astype("<i2").tobytes())
    options = dict(sample_frequency=float(rate), num_mel_bins=40)
    y = torchaudio.compliance.kaldi.fbank(x[None] * 32768, **options)
    write(os.path.join(OUT, "fbank_22050.safetensors"), {"input": x * 32768, "expected": y},
          {"function": "torchaudio.compliance.kaldi.fbank", "options": json.dumps(options),
           "torchaudio_version": torchaudio.__version__, "wav": "chirp_22050.wav"})
    options = dict(sample_rate=rate, n_fft=1024, hop_length=256, n_mels=80)
    y = torchaudio.transforms.MelSpectrogram(**options)(x)
    write(os.path.join(OUT, "melspec_22050.safetensors"), {"input": x, "expected": y},
          {"function": "torchaudio.transforms.MelSpectrogram", "options": json.dumps(options),
           "torchaudio_version": torchaudio.__version__, "wav": "chirp_22050.wav"})


if __name__ == "__main__":
    main()
