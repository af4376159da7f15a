"""What a job does to one item, per subcommand. A Task is built once per worker process (the
model loads once) and then called per item: item -> ({name: tensor}, {metadata}).

Each task produces what the matching `alto` command writes for the same file: `encode` the codes
of `alto encode`, `features` the tensors of `alto features`, `embed` the last hidden state of
`alto embed` (or, for an audio LM, its projected audio embeddings), `transcribe` the text of
`alto transcribe`.
"""
import abc
import dataclasses
import json
import os
from typing import Any

import torch

import alto

from .items import Item, load_item_audio

TASKS = ("encode", "features", "transcribe", "embed")


@dataclasses.dataclass(frozen=True)
class JobSpec:
    """What every worker needs to build the task; JSON-able (it is the job's identity)."""

    task: str
    model: str = ""  # a checkpoint folder (encode, transcribe, embed)
    options: dict = dataclasses.field(default_factory=dict)
    device: str = "cpu"
    dtype: str = "float32"

    def __post_init__(self):
        if self.task not in TASKS:
            raise alto.InvalidArgument(f"task: expected one of {', '.join(TASKS)}, got {self.task!r}")
        if self.task != "features" and not self.model:
            raise alto.InvalidArgument(f"{self.task}: needs model (a checkpoint folder)")
        if self.model and not os.path.isfile(os.path.join(self.model, "config.json")):
            raise alto.IoError(f"{self.model}: no config.json (expected a checkpoint folder)")

    def as_json(self):
        return dataclasses.asdict(self)


def model_type(folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        return json.load(f).get("model_type", "")


def _shapes(arrays):
    return {name: {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
            for name, t in arrays.items()}


class Task(abc.ABC):
    """Base: the common metadata of every item; subclasses add their model's work."""

    def __init__(self, spec: JobSpec):
        self.spec = spec
        self.model_type = ""

    def __call__(self, item: Item):
        arrays, meta, rate, samples = self.process(item)
        arrays = {name: t.detach().to("cpu").contiguous() for name, t in arrays.items()}
        out = {"id": item.id, "path": item.source}
        if item.start is not None:
            out["start"] = item.start
        if item.end is not None:
            out["end"] = item.end
        out.update(duration=samples / rate, sample_rate=rate, arrays=_shapes(arrays))
        out.update(meta)
        out.update(model=self.spec.model, model_type=self.model_type, options=self.spec.options,
                   alto_version=alto.__version__)
        # The manifest's other columns, a name alto sets itself kept as manifest_<name> (a
        # NeMo manifest's own "duration", say).
        for name, value in item.fields.items():
            out["manifest_" + name if name in out else name] = value
        return arrays, out

    @abc.abstractmethod
    def process(self, item: Item):
        """-> ({name: tensor}, task metadata, sample rate, samples processed)."""


class EncodeTask(Task):
    """Codec codes: `alto encode`'s resampling, channel remix and options."""

    def __init__(self, spec):
        super().__init__(spec)
        self.codec = alto.AudioTokenizer.from_pretrained(spec.model, spec.device, spec.dtype)
        self.model_type = self.codec.model_type
        o = spec.options
        self.encode_options = {k: o[k] for k in ("bandwidth", "num_quantizers") if o.get(k)}
        # Every codec's codebooks fit 16 bits (EnCodec, DAC 1024, Mimi 2048): a quarter of
        # int64's bytes, the same values.
        self.codes_dtype = torch.int16 if self.codec.codebook_size <= 32768 else torch.int32

    def process(self, item):
        codec = self.codec
        wave, rate = load_item_audio(item, codec.sample_rate, codec.channels == 1)
        if wave.shape[0] == 1 and codec.channels > 1:
            wave = wave.expand(codec.channels, -1)
        if wave.shape[0] != codec.channels:
            raise alto.InvalidArgument(f"{item.path} has {wave.shape[0]} channels; the "
                                       f"{codec.model_type} model takes {codec.channels}")
        codes, scales = codec.encode(wave[None].contiguous(), return_scales=True,
                                     **self.encode_options)
        arrays = {"codes": codes.to(self.codes_dtype)}
        if scales is not None:
            arrays["scales"] = scales.float()
        meta = {"frame_rate": codec.frame_rate, "num_codebooks": int(codes.shape[-2]),
                "num_samples": int(wave.shape[-1])}
        return arrays, meta, rate, wave.shape[-1]


# Extractors whose attention mask `alto features` writes beside the features.
MASKED_EXTRACTORS = ("whisper", "seamless-m4t", "wav2vec2")


class FeaturesTask(Task):
    """Features: `alto features` on one file (--extractor with option text, or --config)."""

    def __init__(self, spec):
        super().__init__(spec)
        o = spec.options
        if bool(o.get("extractor")) == bool(o.get("config")):
            raise alto.InvalidArgument("features: give exactly one of extractor and config")
        if o.get("config"):
            self.extractor = alto.features.FeatureExtractor.from_pretrained(o["config"])
        else:
            self.extractor = alto.features.create_from_text(o["extractor"],
                                                            o.get("extractor_options", {}))
        self.model_type = self.extractor.name
        self.resample = bool(o.get("resample"))
        self.waveform_scale = float(o.get("waveform_scale", 1.0))
        self.call_options = {}
        name = self.extractor.name
        if name in MASKED_EXTRACTORS:
            self.call_options["return_attention_mask"] = True
        if name == "whisper" and o.get("no_pad"):
            self.call_options.update(padding="longest", truncation=False)

    def process(self, item):
        rate = self.extractor.sampling_rate
        wave, got = load_item_audio(item, rate if self.resample else None, True)
        if got != rate:
            raise alto.InvalidArgument(
                f"{item.path}: the {self.extractor.name} feature extractor was built for {rate} Hz "
                f"audio, got {got} Hz: resample it (resample=True, --resample)")
        wave = wave[0]
        if self.waveform_scale != 1.0:
            wave = wave * self.waveform_scale
        out = self.extractor(wave, **self.call_options)
        features = out.get("input_features", out.get("input_values"))
        arrays = {"features": features[0]}
        if "attention_mask" in out:
            arrays["attention_mask"] = out["attention_mask"][0]
        if not torch.isfinite(arrays["features"]).all():
            raise alto.InvalidArgument(f"{item.path}: the features hold NaN or infinite values "
                                       "(is the audio finite and in range?)")
        return arrays, {"extractor": self.extractor.name,
                        "extractor_options": self.extractor.options}, got, wave.shape[-1]


class TranscribeTask(Task):
    """Text: Whisper (openai-whisper's transcribe), Kyutai STT or an audio LM's transcription."""

    def __init__(self, spec):
        super().__init__(spec)
        self.model_type = model_type(spec.model)
        o = spec.options
        if self.model_type == "whisper":
            self.model = alto.models.Whisper.from_pretrained(spec.model, spec.device, spec.dtype)
            self.rate = 16000
            self.options = {k: o[k] for k in ("tokenizer", "language", "task", "timestamps",
                                              "beam_size", "temperatures") if o.get(k) is not None}
        elif self.model_type == "kyutai_speech_to_text":
            self.model = alto.models.KyutaiSpeechToText.from_pretrained(spec.model, spec.device,
                                                                       spec.dtype)
            self.rate = self.model.sampling_rate
        elif self.model_type in alto.models.AudioLanguageModel.model_types():
            self.model = alto.models.AudioLanguageModel.from_pretrained(spec.model, spec.device,
                                                                       spec.dtype)
            self.rate = self.model.sampling_rate
        else:
            raise alto.Unsupported(f"{spec.model}: transcribe takes Whisper, Kyutai STT or an audio "
                                   f"LM, not model_type '{self.model_type}'")

    def process(self, item):
        wave, rate = load_item_audio(item, self.rate, True)
        wave = wave[0]
        o = self.spec.options
        if self.model_type == "whisper":
            t = self.model.transcribe(wave, **self.options)
            meta = {"transcript": t["text"], "language": t["language"], "segments": [
                {"start": s["start"], "end": s["end"], "text": s["text"], "tokens": s["tokens"]}
                for s in t["segments"]]}
        elif self.model_type == "kyutai_speech_to_text":
            t = self.model.transcribe(wave)
            meta = {"transcript": t["text"], "words": t["words"]}
        else:
            inputs = self.model.transcription_inputs(wave, o.get("language"))
            extra = {"max_new_tokens": o["max_new_tokens"]} if o.get("max_new_tokens") else {}
            t = self.model.generate(inputs, **extra)
            meta = {"transcript": t.get("text", ""),
                    "generated_ids": t["generated_ids"][0].tolist()}
        return {}, meta, rate, wave.shape[-1]


class EmbedTask(Task):
    """Embeddings: an audio encoder's last hidden state (`alto embed`), or an audio LM's
    projected audio embeddings (what replaces its audio placeholders)."""

    def __init__(self, spec):
        super().__init__(spec)
        self.model_type = model_type(spec.model)
        if self.model_type in alto.models.AudioLanguageModel.model_types():
            self.lm = alto.models.AudioLanguageModel.from_pretrained(spec.model, spec.device,
                                                                    spec.dtype)
            self.rate = self.lm.sampling_rate
        else:
            self.lm = None
            self.encoder = alto.models.AudioEncoder.from_pretrained(spec.model, spec.device,
                                                                   spec.dtype)
            self.rate = self.encoder.sampling_rate

    def process(self, item):
        wave, rate = load_item_audio(item, self.rate, True)
        wave = wave[0]
        if self.lm is not None:
            embeds = self.lm.embed(self.lm.transcription_inputs(wave))["audio_embeds"]
            return {"audio_embeds": embeds.float()}, {}, rate, wave.shape[-1]
        out = self.encoder.embed(wave)
        used = min(wave.shape[-1], int(self.encoder.max_seconds * rate))
        return {"last_hidden_state": out["last_hidden_state"][0]}, {
            "encoded_seconds": used / rate}, rate, wave.shape[-1]


_TASK_CLASSES = {"encode": EncodeTask, "features": FeaturesTask, "transcribe": TranscribeTask,
                 "embed": EmbedTask}


def make_task(spec: JobSpec) -> Task:
    return _TASK_CLASSES[spec.task](spec)
