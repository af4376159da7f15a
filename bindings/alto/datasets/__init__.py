"""alto.datasets: a whole audio corpus to codec codes, features, transcripts or embeddings, on
Dask — sharded, resumable, nothing lost.

    python3 -m alto.datasets encode --model mimi/ corpus/ -o corpus-mimi/
    ds = alto.datasets.load("corpus-mimi/")   # {id: {"codes": ndarray, "metadata": {...}}}

The same from Python:

    summary = alto.datasets.encode("corpus/", "corpus-mimi/", model="mimi/", num_quantizers=8)

Inputs are a folder tree of audio files or a manifest (JSON Lines or CSV: path, optional id,
start and end in seconds, text, any other column carried through). Each item's arrays are what
the matching `alto` command gives for the file. Items that cannot be processed are listed in
OUT/failures.jsonl with alto's message; the job goes on. By default an embedded Dask
LocalCluster with one single-threaded worker per core runs the job; scheduler="tcp://host:8786"
(--scheduler) runs it on an existing cluster whose workers have alto installed and see the same
files. See docs/datasets.md.
"""
import os

from .engine import run
from .shards import Dataset, load


def encode(inputs, out, *, model, bandwidth=0.0, num_quantizers=0, **job):
    """Codec codes (EnCodec, Mimi, DAC) of every item, as `alto encode` gives them (stored as
    int16: every codec's codebooks fit). job: device, dtype, shard_size, workers, threads,
    scheduler, overwrite, progress, extensions."""
    return run("encode", inputs, out, model=model,
               options={"bandwidth": float(bandwidth), "num_quantizers": int(num_quantizers)},
               **job)


def features(inputs, out, *, extractor="", config="", extractor_options=None, resample=False,
             waveform_scale=1.0, no_pad=False, **job):
    """Features of every item, as `alto features` gives them: extractor (a registered name) with
    extractor_options as its flags take them ({"n-mels": "80"}), or config (a
    preprocessor_config.json or its folder)."""
    options = {"extractor": extractor, "config": config,
               "extractor_options": {k: str(v) for k, v in (extractor_options or {}).items()},
               "resample": bool(resample), "waveform_scale": float(waveform_scale),
               "no_pad": bool(no_pad)}
    return run("features", inputs, out, options=options, **job)


def transcribe(inputs, out, *, model, tokenizer=None, language=None, task=None, timestamps=None,
               beam_size=None, temperatures=None, max_new_tokens=None, **job):
    """Transcripts (in each item's metadata): Whisper (tokenizer: a folder or .tiktoken file when
    the model folder has none; temperatures: the fallback ladder, [0.0] for none), Kyutai STT,
    or an audio LM (Qwen2-Audio, Voxtral) asked for a transcription."""
    options = {k: v for k, v in dict(
        tokenizer=tokenizer and os.path.abspath(tokenizer), language=language, task=task,
        timestamps=timestamps, beam_size=beam_size,
        temperatures=temperatures and [float(t) for t in temperatures],
        max_new_tokens=max_new_tokens).items() if v is not None}
    return run("transcribe", inputs, out, model=model, options=options, **job)


def embed(inputs, out, *, model, **job):
    """Embeddings: an audio encoder's last_hidden_state (`alto embed`), or an audio LM's
    projected audio_embeds."""
    return run("embed", inputs, out, model=model, **job)


__all__ = ["Dataset", "embed", "encode", "features", "load", "run", "transcribe"]
