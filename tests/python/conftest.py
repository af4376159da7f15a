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


def max_abs(a, b):
    return (a.double() - b.double()).abs().max().item()
