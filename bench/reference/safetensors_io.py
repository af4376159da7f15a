"""A minimal safetensors reader and writer in pure Python/numpy (the package is not installed).

Layout: 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}
(plus an optional "__metadata__" of strings), then the raw little-endian tensor bytes.
"""
import json
import struct

import numpy as np
import torch

_NUMPY = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.int64: "I64",
          torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
          torch.bool: "BOOL"}


def read_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)), 8 + n


def load(path):
    """All tensors of a file as a dict name -> torch.Tensor (CPU, own memory)."""
    header, data_start = read_header(path)
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = np.dtype(_NUMPY[info["dtype"]])
        array = np.frombuffer(raw, dtype=dtype, count=(end - begin) // dtype.itemsize,
                              offset=data_start + begin)
        out[name] = torch.from_numpy(array.copy()).reshape(info["shape"])
    return out


def metadata(path):
    return read_header(path)[0].get("__metadata__", {})


def save(path, tensors, meta=None):
    """tensors: dict name -> torch.Tensor; meta: dict of strings for "__metadata__". Writes one
    tensor at a time, so a checkpoint of several GB needs no second copy in memory."""
    header, offset = {}, 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = dict(meta or {"format": "pt"})
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data section starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors.values():
            f.write(memoryview(t.detach().contiguous().cpu().numpy()).cast("B"))
