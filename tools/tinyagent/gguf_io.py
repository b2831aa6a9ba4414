"""Minimal GGUF v3 reader/writer for F32/I32 tensors (the trained weights go out as F32 and
`ds4ctl quantize` encodes them with the engine's quantizers; the dequantized file it writes back
comes in here for the parity reference). Typed metadata: values are (type, value) pairs where type
is one of the names in TYPES; arrays are ("array", (elem_type, [values])).
"""
import struct

import numpy as np

TYPES = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8, "array": 9,
         "u64": 10, "i64": 11, "f64": 12}
NAMES = {v: k for k, v in TYPES.items()}
FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i", "f32": "<f", "bool": "<?",
       "u64": "<Q", "i64": "<q", "f64": "<d"}
GGML_F32, GGML_I32 = 0, 26


def _s(b):
    return struct.pack("<Q", len(b)) + b


def _value(t, v):
    if t == "str":
        return _s(v.encode("utf-8"))
    if t == "array":
        et, vals = v
        out = struct.pack("<IQ", TYPES[et], len(vals))
        return out + b"".join(_value(et, x) for x in vals)
    return struct.pack(FMT[t], v)


def write(path, metadata, tensors, alignment=32):
    """metadata: list of (key, type, value); tensors: list of (name, np.ndarray float32|int32, dims)
    with dims in GGUF order (ne0 first) and the array's C order matching it."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for k, t, v in metadata:
        head += _s(k.encode()) + struct.pack("<I", TYPES[t]) + _value(t, v)
    offs, off = [], 0
    for name, arr, dims in tensors:
        off = (off + alignment - 1) // alignment * alignment
        offs.append(off)
        off += arr.nbytes
    for (name, arr, dims), o in zip(tensors, offs):
        gt = GGML_F32 if arr.dtype == np.float32 else GGML_I32
        head += _s(name.encode()) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", gt, o)
    pad = (-len(head)) % alignment
    with open(path + ".tmp", "wb") as f:
        f.write(head + b"\0" * pad)
        pos = 0
        for (name, arr, dims), o in zip(tensors, offs):
            f.write(b"\0" * (o - pos))
            f.write(np.ascontiguousarray(arr).tobytes())
            pos = o + arr.nbytes
    import os
    os.replace(path + ".tmp", path)


def read(path):
    """Returns (metadata dict key -> value, tensors dict name -> np.ndarray shaped dims reversed)."""
    data = open(path, "rb").read()
    p = 0

    def take(fmt):
        nonlocal p
        v = struct.unpack_from(fmt, data, p)
        p += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal p
        n = take("<Q")
        s = data[p:p + n].decode("utf-8")
        p += n
        return s

    def value(t):
        if t == "str":
            return string()
        if t == "array":
            et = NAMES[take("<I")]
            n = take("<Q")
            return [value(et) for _ in range(n)]
        return take(FMT[t])

    assert data[:4] == b"GGUF"
    p = 4
    take("<I")
    nt, nk = take("<Q"), take("<Q")
    meta = {}
    for _ in range(nk):
        k = string()
        meta[k] = value(NAMES[take("<I")])
    infos = []
    for _ in range(nt):
        name = string()
        nd = take("<I")
        dims = [take("<Q") for _ in range(nd)]
        gt = take("<I")
        off = take("<Q")
        infos.append((name, dims, gt, off))
    align = meta.get("general.alignment", 32)
    base = (p + align - 1) // align * align
    tensors = {}
    for name, dims, gt, off in infos:
        if gt not in (GGML_F32, GGML_I32):
            raise ValueError("%s: tensor %s has type %d; only F32/I32 are read here" % (path, name, gt))
        dt = np.float32 if gt == GGML_F32 else np.int32
        n = int(np.prod(dims))
        tensors[name] = np.frombuffer(data, dtype=dt, count=n, offset=base + off).reshape(list(reversed(dims)))
    return meta, tensors
