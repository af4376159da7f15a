"""python3 -m alto.datasets {encode,features,transcribe,embed} INPUT -o OUT [options]

Exit status: 0 every item done; 3 the job finished but some items failed (listed in
OUT/failures.jsonl); 1 the job could not run or finish (one line on stderr; a rerun resumes);
2 a usage error.
"""
import argparse
import json
import os
import sys

import alto
import alto.datasets as datasets

from .engine import interrupt_as_keyboard


def _common(parser):
    parser.add_argument("input", help="a folder tree of audio files, or a manifest (.jsonl, "
                        ".csv, .tsv: path, optional id, start, end, text, other columns)")
    parser.add_argument("-o", "--output", required=True, help="the output folder")
    parser.add_argument("--shard-size", type=int, default=256, help="items per shard (256)")
    parser.add_argument("--workers", type=int, help="local Dask worker processes (one per core)")
    parser.add_argument("--threads", type=int,
                        help="alto threads per worker (cores / workers locally, 1 on a cluster)")
    parser.add_argument("--scheduler", help="an existing Dask scheduler (tcp://host:8786) "
                        "instead of a local cluster")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--dtype", default="float32", help="float32, float16 or bfloat16")
    parser.add_argument("--extensions", help="file suffixes a folder walk takes, comma-separated "
                        "(default: every audio container alto reads)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace another job's output in the folder")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    parser.add_argument("--no-progress", action="store_true", help="no progress line")


def _parser():
    parser = argparse.ArgumentParser(
        prog="python3 -m alto.datasets",
        description="A whole audio corpus to codes, features, transcripts or embeddings on Dask: "
                    "sharded (safetensors), resumable, failures listed in failures.jsonl.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("encode", help="codec codes (EnCodec, Mimi, DAC), as alto encode")
    _common(p)
    p.add_argument("--model", required=True, help="codec checkpoint folder")
    p.add_argument("--bandwidth", type=float, default=0.0, help="EnCodec bandwidth in kbps")
    p.add_argument("--num-quantizers", type=int, default=0, help="codebooks to keep (Mimi, DAC)")
    p = features = sub.add_parser("features", help="features, as alto features; any other --option VALUE "
                       "is the extractor's (--n-mels 80)")
    _common(p)
    p.add_argument("--extractor", default="", help="a registered extractor: " +
                   ", ".join(alto.features.extractors()))
    p.add_argument("--config", default="", help="a preprocessor_config.json or its folder")
    p.add_argument("--resample", action="store_true", help="resample to the extractor's rate")
    p.add_argument("--waveform-scale", type=float, default=1.0,
                   help="multiply the decoded samples first (32768: Kaldi's int16 range)")
    p.add_argument("--no-pad", action="store_true", help="Whisper: no 30 s padding or truncation")
    p = sub.add_parser("transcribe", help="text: Whisper, Kyutai STT or an audio LM")
    _common(p)
    p.add_argument("--model", required=True, help="checkpoint folder")
    p.add_argument("--tokenizer", help="Whisper: a tokenizer folder or .tiktoken file (default: "
                   "the model folder's)")
    p.add_argument("--language", help="an ISO code (default: detected)")
    p.add_argument("--task", choices=["transcribe", "translate"], help="Whisper's task")
    p.add_argument("--timestamps", action="store_true", default=None, help="Whisper timestamps")
    p.add_argument("--beam", dest="beam_size", type=int, help="Whisper beam size")
    p.add_argument("--temperatures", help="Whisper's fallback temperatures, comma-separated "
                   "(default 0,0.2,0.4,0.6,0.8,1; 0 for no fallback)")
    p.add_argument("--max-new-tokens", type=int, help="audio LMs: the reply's length limit")
    p = sub.add_parser("embed", help="encoder last_hidden_state or audio-LM audio_embeds")
    _common(p)
    p.add_argument("--model", required=True, help="checkpoint folder")
    return parser, features


def _split_extractor_options(argv, known):
    """features: each --name [VALUE] that is not one of the subcommand's own options is the
    extractor's -> (the other words, {name: text}). A flag alone ("--use-energy") reads "", as
    `alto features` reads it; a word after it that names an existing file stays an input."""
    rest, options, i = [], {}, 0
    while i < len(argv):
        word = argv[i]
        name, eq, value = word[2:].partition("=")
        if not word.startswith("--") or len(word) == 2 or "--" + name in known:
            rest.append(word)
            i += 1
            continue
        follower = argv[i + 1] if i + 1 < len(argv) else None
        if not eq and follower is not None and not follower.startswith("--") and (
                follower.lower() in ("true", "false", "1", "0") or not os.path.exists(follower)):
            value = follower
            i += 1
        options[name] = value
        i += 1
    return rest, options


def main(argv=None):
    parser, features = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    extractor_options = {}
    if argv[:1] == ["features"]:
        known = {flag for action in features._actions for flag in action.option_strings}
        argv, extractor_options = _split_extractor_options(argv, known)
    args = parser.parse_args(argv)
    job = dict(shard_size=args.shard_size, workers=args.workers, threads=args.threads,
               scheduler=args.scheduler, device=args.device, dtype=args.dtype,
               overwrite=args.overwrite, progress=False if args.no_progress else None)
    if args.extensions:
        job["extensions"] = tuple(e if e.startswith(".") else "." + e
                                  for e in args.extensions.split(",") if e)
    interrupt_as_keyboard()
    try:
        if args.command == "encode":
            summary = datasets.encode(args.input, args.output, model=args.model,
                                      bandwidth=args.bandwidth,
                                      num_quantizers=args.num_quantizers, **job)
        elif args.command == "features":
            summary = datasets.features(args.input, args.output, extractor=args.extractor,
                                        config=args.config,
                                        extractor_options=extractor_options,
                                        resample=args.resample,
                                        waveform_scale=args.waveform_scale, no_pad=args.no_pad,
                                        **job)
        elif args.command == "transcribe":
            summary = datasets.transcribe(args.input, args.output, model=args.model,
                                          tokenizer=args.tokenizer, language=args.language,
                                          task=args.task, timestamps=args.timestamps,
                                          beam_size=args.beam_size,
                                          temperatures=args.temperatures and [
                                              float(t) for t in args.temperatures.split(",")],
                                          max_new_tokens=args.max_new_tokens, **job)
        else:
            summary = datasets.embed(args.input, args.output, model=args.model, **job)
    except alto.Error as e:
        print(f"alto.datasets: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("alto.datasets: interrupted; rerun the same command to finish", file=sys.stderr)
        return 1
    print(f"alto.datasets: {summary['done']} done, {summary['failed']} failed"
          f"{' (see ' + args.output + '/failures.jsonl)' if summary['failed'] else ''}, "
          f"{summary['skipped']} skipped (finished earlier); {summary['audio_hours']:.3f} h audio "
          f"in {summary['seconds']:.1f} s ({summary['hours_per_hour']:.0f} h/h); "
          f"{summary['shards']} shards in {args.output}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    return 3 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
