"""alto.Error family, safetensors, zero-copy tensor arguments, threads, the activation cache."""

import numpy as np
import pytest
import torch

import alto

from conftest import DATA, run_concurrently


def test_error_family():
    assert issubclass(alto.Error, RuntimeError)
    for sub in (alto.InvalidArgument, alto.IoError, alto.Unsupported, alto.OutOfMemory):
        assert issubclass(sub, alto.Error)
    assert issubclass(alto.InvalidArgument, ValueError)
    assert issubclass(alto.OutOfMemory, MemoryError)


def test_allocation_failure_is_alto_out_of_memory():
    # 10^12 samples seen through a zero stride: no memory until the extractor needs its own.
    huge = torch.zeros(1).expand(10**12)
    with pytest.raises(alto.OutOfMemory, match="GB asked for at once"):
        alto.features.KaldiFbank().compute(huge)


def test_numpy_argument_is_a_view():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = alto.as_tensor(a)
    assert t.data_ptr() == a.ctypes.data
    assert t.shape == (3, 4) and t.dtype == torch.float32
    strided = a[:, ::2]  # non-contiguous: still a view, with numpy's strides
    v = alto.as_tensor(strided)
    assert v.data_ptr() == strided.ctypes.data
    assert v.stride() == (4, 2)


def test_torch_argument_is_the_same_tensor():
    t = torch.randn(5, 7)
    assert alto.as_tensor(t).data_ptr() == t.data_ptr()
    assert alto.as_tensor(t.t()).stride() == t.t().stride()


def test_result_to_numpy_shares_memory():
    t = alto.as_tensor(np.ones(4, dtype=np.float32))
    assert np.shares_memory(t.numpy(), t.numpy())


def test_bad_argument_type():
    with pytest.raises(TypeError):
        alto.as_tensor([1.0, 2.0])
    with pytest.raises(alto.InvalidArgument):
        alto.as_tensor(np.array(["a", "b"], dtype=object))


def test_safetensors_round_trip(tmp_path):
    tensors = {
        "a": torch.randn(3, 4),
        "b": torch.arange(10, dtype=torch.int64),
        "c": np.linspace(0, 1, 6, dtype=np.float64).reshape(2, 3),
        "d": torch.randn(2, 2).to(torch.bfloat16),
    }
    path = tmp_path / "x.safetensors"
    alto.save_safetensors(str(path), tensors, {"format": "pt"})
    loaded, metadata = alto.load_safetensors(str(path), return_metadata=True)
    assert list(loaded) == ["a", "b", "c", "d"]
    assert metadata == {"format": "pt"}
    for name, value in tensors.items():
        expected = torch.as_tensor(value)
        assert loaded[name].dtype == expected.dtype
        assert torch.equal(loaded[name], expected)


def test_safetensors_views_of_one_mapping(tmp_path):
    path = tmp_path / "v.safetensors"
    alto.save_safetensors(str(path), {"x": torch.zeros(256), "y": torch.ones(256)})
    loaded = alto.load_safetensors(str(path))
    # Both tensors point into the same mapping, 1024 bytes apart, as the file lays them out.
    assert abs(loaded["y"].data_ptr() - loaded["x"].data_ptr()) == 1024


def test_safetensors_errors(tmp_path):
    with pytest.raises(alto.IoError, match="missing.safetensors"):
        alto.load_safetensors(str(tmp_path / "missing.safetensors"))
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(alto.IoError):
        alto.load_safetensors(str(bad))
    with pytest.raises(alto.InvalidArgument, match="'t'"):
        alto.save_safetensors(str(tmp_path / "o.safetensors"), {"t": [1, 2, 3]})


def test_threads_setting():
    n = alto.num_threads()
    assert n >= 1
    alto.set_num_threads(1)
    assert alto.num_threads() == 1
    alto.set_num_threads(n)
    with pytest.raises(alto.Error):
        alto.set_num_threads(0)
    with pytest.raises(alto.Error, match="got 1000000"):  # it hung starting the pools
        alto.set_num_threads(1000000)
    assert alto.num_threads() == n


def test_activation_cache():
    """A long DAC decode leaves its large activations for reuse; release returns them."""
    limit = alto.activation_cache_limit()
    alto.release_activation_cache()
    assert alto.cached_activation_bytes() == 0
    tok = alto.AudioTokenizer.from_pretrained(str(DATA / "models" / "dac-44khz-tiny-random"))
    tok.decode(torch.zeros(1, 4, 2000, dtype=torch.int64))  # 1 M samples: activations of MBs
    assert 0 < alto.cached_activation_bytes() <= limit
    alto.set_activation_cache_limit(0)
    assert alto.cached_activation_bytes() == 0
    alto.set_activation_cache_limit(limit)
    assert alto.activation_cache_limit() == limit
    alto.release_activation_cache()
    assert alto.cached_activation_bytes() == 0


def test_concurrent_safetensors_reads(tmp_path):
    path = tmp_path / "c.safetensors"
    alto.save_safetensors(str(path), {"w": torch.arange(1000, dtype=torch.float32)})

    def work():
        for _ in range(20):
            assert alto.load_safetensors(str(path))["w"].sum().item() == 499500

    run_concurrently(work, threads=8)
