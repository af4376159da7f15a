"""Shared fixtures: where the test data lives, and the module under test (PYTHONPATH from ctest)."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("ALTO_TEST_DATA_DIR", ROOT / "tests" / "data"))
SAMPLES = ROOT / "samples"


@pytest.fixture(scope="session")
def data():
    return DATA


@pytest.fixture(scope="session")
def samples():
    return SAMPLES


def golden_model(name):
    """tests/data/models/<name>: (folder, io.safetensors' tensors, its metadata, the absolute
    tolerance of every tensor, 0 for the exact ones)."""
    import json

    import alto

    folder = DATA / "models" / name
    tensors, metadata = alto.load_safetensors(str(folder / "io.safetensors"), return_metadata=True)
    atol = {k: (0.0 if v == "exact" else v) for k, v in json.loads(metadata["tolerances_abs"]).items()}
    return folder, tensors, metadata, atol


def max_abs(a, b):
    return (a.double() - b.double()).abs().max().item()


def run_concurrently(work, threads):
    """Runs work() on `threads` threads at once; re-raises the first exception any of them hit."""
    import threading

    errors = []

    def guarded():
        try:
            work()
        except BaseException as e:  # noqa: BLE001 - re-raised below in the main thread
            errors.append(e)

    pool = [threading.Thread(target=guarded) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
