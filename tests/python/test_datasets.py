"""alto.datasets: a corpus of ~40 clips (WAV 16/24-bit/float, FLAC, MP3, Opus, M4A, WebM; 16, 24,
44.1 kHz; mono and stereo; 0.3-3 s), two corrupt files and one missing file, on a Dask
LocalCluster of 2 workers. Every good item equals the `alto` command on the same file; the bad
ones are in failures.jsonl; a killed worker, an interrupted run and 1 vs 2 workers all give the
same bytes."""
import json
import math
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import torch

import alto
import alto.datasets

from conftest import DATA

MIMI = DATA / "models" / "mimi-tiny-random"
WHISPER = DATA / "models" / "whisper-tiny-random"
QWEN2_AUDIO = DATA / "models" / "qwen2-audio-tiny-random"
KYUTAI = DATA / "models" / "kyutai-stt-tiny-random"


def alto_cli():
    """The `alto` binary of the build this module comes from (ALTO_CLI overrides)."""
    path = os.environ.get("ALTO_CLI") or str(pathlib.Path(alto.__file__).parent.parent / "cli" / "alto")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no alto CLI at {path}")
    return path


def job_env():
    """The environment of a `python3 -m alto.datasets` child: this module on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(alto.__file__).parent),
                                         env.get("PYTHONPATH", "")])
    return env


def run_job_cli(args, **kwargs):
    return subprocess.run([sys.executable, "-m", "alto.datasets", *args], env=job_env(),
                          capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(folder, manifest, good item ids, bad item ids)."""
    root = tmp_path_factory.mktemp("corpus")
    audio = root / "audio"
    (audio / "a").mkdir(parents=True)
    (audio / "b").mkdir()
    g = torch.Generator().manual_seed(7)
    rows = []
    for i in range(34):
        rate = (16000, 24000, 44100)[i % 3]
        channels = 2 if i % 4 == 0 else 1
        seconds = 0.3 + 2.7 * ((i * 37) % 17) / 16
        n = int(seconds * rate)
        t = torch.arange(n) / rate
        wave = 0.3 * torch.sin(2 * math.pi * (150 + 40 * i) * t) + 0.05 * torch.randn(n, generator=g)
        wave = wave.expand(channels, n).contiguous()
        fmt, encoding = [("wav", "16"), ("flac", "16"), ("wav", "24"), ("wav", "32f")][i % 4]
        name = f"{'ab'[i % 2]}/clip{i:02d}.{fmt}"
        alto.save_audio(str(audio / name), wave, rate, format=fmt, encoding=encoding)
        rows.append({"path": f"audio/{name}", "id": f"clip{i:02d}", "text": f"clip number {i}",
                     "speaker": f"s{i % 5}"})
    for ext in ("mp3", "opus", "m4a", "webm"):
        shutil.copy(DATA / f"stereo44k.{ext}", audio / "b" / f"stereo44k.{ext}")
        rows.append({"path": f"audio/b/stereo44k.{ext}", "id": f"stereo-{ext}"})
    # Two segments of one file, cut without decoding the rest.
    rows.append({"path": "audio/a/clip02.wav", "id": "clip02-head", "start": 0.0, "end": 0.5})
    rows.append({"path": "audio/a/clip02.wav", "id": "clip02-tail", "start": 0.25})
    (audio / "a" / "corrupt.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(200)))
    (audio / "b" / "truncated.flac").write_bytes((audio / "b" / "clip01.flac").read_bytes()[:60])
    rows.insert(5, {"path": "audio/a/corrupt.wav", "id": "corrupt"})
    rows.insert(17, {"path": "audio/b/truncated.flac", "id": "truncated"})
    rows.insert(29, {"path": "audio/missing.wav", "id": "missing"})
    manifest = root / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = ["corrupt", "truncated", "missing"]
    good = [r["id"] for r in rows if r["id"] not in bad]
    return audio, manifest, good, bad


def files_of(out):
    return {p.name: p.read_bytes() for p in sorted(pathlib.Path(out).iterdir())}


@pytest.fixture(scope="module")
def encoded(corpus, tmp_path_factory):
    """The manifest encoded with Mimi on 2 workers, 4 items per shard."""
    _, manifest, _, _ = corpus
    out = tmp_path_factory.mktemp("mimi-2-workers")
    summary = alto.datasets.encode(str(manifest), str(out), model=str(MIMI), num_quantizers=4,
                                   shard_size=4, workers=2, progress=False)
    return out, summary


def test_every_good_item_equals_alto_encode_and_the_bad_ones_are_listed(corpus, encoded, tmp_path):
    audio, manifest, good, bad = corpus
    out, summary = encoded
    assert (summary["done"], summary["failed"], summary["items"]) == (len(good), 3, len(good) + 3)
    ds = alto.datasets.load(str(out))
    assert list(ds) == good  # manifest order, failures left out
    rows = {json.loads(line)["id"]: json.loads(line) for line in manifest.read_text().splitlines()}
    cli = alto_cli()
    for item_id in good:
        item = ds[item_id]
        meta = item["metadata"]
        row = rows[item_id]
        if "start" in row:
            continue  # segments: below
        codes_file = tmp_path / "codes.safetensors"
        subprocess.run([cli, "encode", "--model", str(MIMI), "--num-quantizers", "4",
                        str(manifest.parent / row["path"]), "-o", str(codes_file)], check=True)
        expected, expected_meta = alto.load_safetensors(str(codes_file), return_metadata=True)
        assert item["codes"].dtype == np.int16
        np.testing.assert_array_equal(item["codes"].astype(np.int64), expected["codes"].numpy(),
                                      err_msg=item_id)
        assert meta["num_samples"] == int(expected_meta["num_samples"])
        assert meta["duration"] == pytest.approx(meta["num_samples"] / 24000)
        assert meta["arrays"]["codes"] == {"shape": list(expected["codes"].shape), "dtype": "int16"}
        assert (meta["model_type"], meta["alto_version"]) == ("mimi", alto.__version__)
        assert meta["options"] == {"bandwidth": 0.0, "num_quantizers": 4}
        assert meta.get("text") == row.get("text") and meta.get("speaker") == row.get("speaker")
    failures = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    assert [f["id"] for f in failures] == bad
    for f in failures:
        assert f["path"] in f["message"] or f["path"].split("/")[-1] in f["message"], f
        assert f["error"] in ("IoError", "InvalidArgument", "Unsupported", "Error"), f


def test_segments_are_cut_from_the_file(corpus, encoded):
    audio, _, _, _ = corpus
    out, _ = encoded
    ds = alto.datasets.load(str(out))
    codec = alto.AudioTokenizer.from_pretrained(str(MIMI))
    for item_id, offset, duration in (("clip02-head", 0.0, 0.5), ("clip02-tail", 0.25, None)):
        wave, _ = alto.load_audio(str(audio / "a" / "clip02.wav"), sample_rate=24000, mono=True,
                                  offset=offset, duration=duration)
        expected = codec.encode(wave[None], num_quantizers=4)
        item = ds[item_id]
        np.testing.assert_array_equal(item["codes"].astype(np.int64), expected.numpy())
        assert item["metadata"]["start"] == offset
        assert item["metadata"]["num_samples"] == wave.shape[-1]
    whole = ds["clip02"]["metadata"]["num_samples"]
    assert ds["clip02-tail"]["metadata"]["num_samples"] == whole - 24000 // 4


def test_one_and_two_workers_write_the_same_bytes(corpus, encoded, tmp_path):
    _, manifest, _, _ = corpus
    out2, _ = encoded
    out1 = tmp_path / "one"
    alto.datasets.encode(str(manifest), str(out1), model=str(MIMI), num_quantizers=4, shard_size=4,
                         workers=1, progress=False)
    assert files_of(out1) == files_of(out2)


def wait_for(condition, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def shard_files(out):
    return sorted(p for p in pathlib.Path(out).glob("shard-*.safetensors"))


def worker_processes(pid):
    """The Dask worker processes a job started (multiprocessing children, not its tracker)."""
    return [p for p in psutil.Process(pid).children(recursive=True)
            if "spawn_main" in " ".join(p.cmdline()) or "forkserver" in " ".join(p.cmdline())]


def test_a_killed_worker_changes_nothing(corpus, encoded, tmp_path):
    _, manifest, _, _ = corpus
    reference, _ = encoded
    out = tmp_path / "killed"
    job = subprocess.Popen([sys.executable, "-m", "alto.datasets", "encode", "--model", str(MIMI),
                            "--num-quantizers", "4", "--shard-size", "4", "--workers", "2",
                            str(manifest), "-o", str(out)], env=job_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: len(shard_files(out)) >= 1 and len(worker_processes(job.pid)) == 2)
        finished_before = len(shard_files(out))
        victim = worker_processes(job.pid)[0]
        victim.send_signal(signal.SIGKILL)
        _, stderr = job.communicate(timeout=300)
    finally:
        job.kill()
    assert finished_before < 11, "the job ended before the kill: nothing was tested"
    assert job.returncode == 3, stderr  # finished, with the three bad items
    assert files_of(out) == files_of(reference)


def test_an_interrupted_job_resumes_with_only_the_unfinished_shards(corpus, encoded, tmp_path):
    _, manifest, _, _ = corpus
    reference, _ = encoded
    out = tmp_path / "interrupted"
    args = ["encode", "--model", str(MIMI), "--num-quantizers", "4", "--shard-size", "4",
            "--workers", "1", "--json", str(manifest), "-o", str(out)]
    job = subprocess.Popen([sys.executable, "-m", "alto.datasets", *args], env=job_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: len(shard_files(out)) >= 2)
        job.send_signal(signal.SIGINT)
        _, stderr = job.communicate(timeout=120)
    finally:
        job.kill()
    assert job.returncode == 1 and "rerun" in stderr, stderr
    kept = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in shard_files(out)}
    assert 2 <= len(kept) < 11
    assert not (out / "index.json").exists()
    rerun = run_job_cli(args, timeout=300)
    assert rerun.returncode == 3, rerun.stderr
    summary = json.loads(rerun.stdout)
    items_kept = sum(len(json.loads(alto.load_safetensors(str(out / name), return_metadata=True)[1]
                                    ["items"])) +
                     len(json.loads(alto.load_safetensors(str(out / name), return_metadata=True)[1]
                                    ["failures"])) for name in kept)
    assert summary["skipped"] == items_kept
    for name, stamp in kept.items():
        p = out / name
        assert (p.stat().st_mtime_ns, p.stat().st_ino) == stamp, f"{name} was rewritten"
    assert files_of(out) == files_of(reference)


def test_features_equal_alto_features_from_a_folder_tree(corpus, tmp_path):
    audio, _, _, _ = corpus
    out = tmp_path / "fbank"
    result = run_job_cli(["features", "--extractor", "kaldi-fbank", "--num-mel-bins", "23",
                          "--dither", "0", "--resample", "--waveform-scale", "32768",
                          "--shard-size", "8", "--workers", "2", "--json", str(audio), "-o",
                          str(out)], timeout=300)
    assert result.returncode == 3, result.stderr  # the two corrupt files
    summary = json.loads(result.stdout)
    ds = alto.datasets.load(str(out))
    assert sorted(f["id"] for f in ds.failures) == ["a/corrupt.wav", "b/truncated.flac"]
    assert summary["done"] == len(ds) == 38
    assert list(ds)[:3] == ["a/clip00.wav", "a/clip02.wav", "a/clip04.wav"]  # sorted walk
    cli = alto_cli()
    for item_id in list(ds)[::5]:
        expected_file = tmp_path / "f.safetensors"
        subprocess.run([cli, "features", "--extractor", "kaldi-fbank", "--num-mel-bins", "23",
                        "--dither", "0", "--resample", "--waveform-scale", "32768",
                        str(audio / item_id), "-o", str(expected_file)], check=True)
        expected = alto.load_safetensors(str(expected_file))["features"]
        np.testing.assert_array_equal(ds[item_id]["features"], expected.numpy(), err_msg=item_id)
        assert ds[item_id]["metadata"]["extractor_options"]["num_mel_bins"] == 23


def test_whisper_features_carry_the_attention_mask(corpus, tmp_path):
    audio, _, _, _ = corpus
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,text\n" + str(audio / "a" / "clip00.wav") + ",hello\n")
    alto.datasets.features(str(manifest), str(tmp_path / "out"), extractor="whisper",
                           extractor_options={"feature-size": 80}, resample=True, workers=1,
                           progress=False)
    item = alto.datasets.load(str(tmp_path / "out"))[str(audio / "a" / "clip00.wav")]
    expected = tmp_path / "w.safetensors"
    subprocess.run([alto_cli(), "features", "--extractor", "whisper", "--feature-size", "80",
                    "--resample", str(audio / "a" / "clip00.wav"), "-o", str(expected)], check=True)
    tensors = alto.load_safetensors(str(expected))
    np.testing.assert_array_equal(item["features"], tensors["features"].numpy())
    np.testing.assert_array_equal(item["attention_mask"], tensors["attention_mask"].numpy())
    assert item["metadata"]["text"] == "hello"


def test_embed_and_transcribe(corpus, tmp_path):
    audio, _, _, _ = corpus
    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("clip00.wav", "clip02.wav"):
        shutil.copy(audio / "a" / name, clips / name)
    out = tmp_path / "embed"
    alto.datasets.embed(str(clips), str(out), model=str(WHISPER), workers=1, progress=False)
    ds = alto.datasets.load(str(out))
    expected_file = tmp_path / "e.safetensors"
    for item_id in ds:
        subprocess.run([alto_cli(), "embed", "--model", str(WHISPER), str(clips / item_id), "-o",
                        str(expected_file)], check=True)
        expected = alto.load_safetensors(str(expected_file))["last_hidden_state"][0]
        np.testing.assert_array_equal(ds[item_id]["last_hidden_state"], expected.numpy())

    lm = alto.models.AudioLanguageModel.from_pretrained(str(QWEN2_AUDIO))
    alto.datasets.embed(str(clips), str(tmp_path / "lm"), model=str(QWEN2_AUDIO), workers=1,
                        progress=False)
    ds = alto.datasets.load(str(tmp_path / "lm"))
    wave, _ = alto.load_audio(str(clips / "clip02.wav"), sample_rate=16000, mono=True)
    expected = lm.embed(lm.transcription_inputs(wave[0]))["audio_embeds"]
    np.testing.assert_array_equal(ds["clip02.wav"]["audio_embeds"], expected.float().numpy())

    tokenizer = DATA / "tokenizers" / "whisper-multilingual"
    alto.datasets.transcribe(str(clips), str(tmp_path / "text"), model=str(WHISPER),
                             tokenizer=str(tokenizer), language="en", temperatures=[0.0],
                             workers=1, progress=False)
    ds = alto.datasets.load(str(tmp_path / "text"))
    assert ds.failures == []
    whisper = alto.models.Whisper.from_pretrained(str(WHISPER))
    expected = whisper.transcribe(wave[0], tokenizer=str(tokenizer), language="en",
                                  temperatures=[0.0])
    assert ds["clip02.wav"]["metadata"]["transcript"] == expected["text"]
    assert ds["clip02.wav"]["metadata"]["language"] == expected["language"]

    alto.datasets.transcribe(str(clips), str(tmp_path / "kyutai"), model=str(KYUTAI), workers=1,
                             progress=False)
    ds = alto.datasets.load(str(tmp_path / "kyutai"))
    model = alto.models.KyutaiSpeechToText.from_pretrained(str(KYUTAI))
    wave, _ = alto.load_audio(str(clips / "clip00.wav"), sample_rate=24000, mono=True)
    assert ds["clip00.wav"]["metadata"]["transcript"] == model.transcribe(wave[0])["text"]


@pytest.mark.parametrize("text, message", [
    ('{"path": "a.wav"}\nnot json\n', ":2: not JSON"),
    ('{"id": "x"}\n', ":1: no 'path'"),
    ('{"path": "a.wav", "start": 2, "end": 1}\n', ":1: 'end' (1.0) must be after 'start'"),
    ('{"path": "a.wav", "start": "soon"}\n', ":1: 'start' must be seconds"),
    ('{"path": "a.wav", "id": "x"}\n{"path": "b.wav", "id": "x"}\n', "occur more than once ('x')"),
])
def test_bad_manifests_are_refused_naming_the_line(tmp_path, text, message):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(text)
    with pytest.raises(alto.InvalidArgument, match=None) as e:
        alto.datasets.encode(str(manifest), str(tmp_path / "out"), model=str(MIMI), progress=False)
    assert message in str(e.value) and str(manifest) in str(e.value)


def test_bad_jobs_are_refused(corpus, encoded, tmp_path):
    audio, manifest, _, _ = corpus
    with pytest.raises(alto.InvalidArgument, match="shard_size"):
        alto.datasets.encode(str(manifest), str(tmp_path / "o"), model=str(MIMI), shard_size=0)
    with pytest.raises(alto.IoError, match="no config.json"):
        alto.datasets.encode(str(manifest), str(tmp_path / "o"), model=str(tmp_path))
    with pytest.raises(alto.Unsupported, match="model_type"):
        alto.datasets.transcribe(str(manifest), str(tmp_path / "o"), model=str(MIMI))
    with pytest.raises(alto.InvalidArgument, match="--num-ceps is not an option of the mel"):
        alto.datasets.features(str(manifest), str(tmp_path / "o"), extractor="mel",
                               extractor_options={"num-ceps": 13})
    with pytest.raises(alto.IoError, match="no such folder or manifest"):
        alto.datasets.encode(str(tmp_path / "nothing"), str(tmp_path / "o"), model=str(MIMI))
    out, _ = encoded  # another job's folder is not overwritten by accident
    with pytest.raises(alto.InvalidArgument, match="holds the output of another job"):
        alto.datasets.encode(str(manifest), str(out), model=str(MIMI), num_quantizers=2)
    result = run_job_cli(["encode", "--model", str(MIMI), str(manifest), "-o", str(out)])
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    with pytest.raises(alto.IoError, match="no index.json"):
        alto.datasets.load(str(tmp_path))
