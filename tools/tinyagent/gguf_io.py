"""Minimal GGUF v3 reader/writer for F32/I32 tensors (the trained weights go out as F32 and
`ds4ctl quantize` encodes them with the engine's quantizers; the dequantized file it writes back
comes in here for the parity reference). Typed metadata: values are (type, value) pairs where type
is one of the names in TYPES; arrays are ("array", (elem_type, [values])).

`read(path, dequantize=True)` also decodes the shipped model's types (F16, Q8_0, Q2_K, IQ2_XXS)
to float32 in numpy, in the engine's order (engine/quant/*.cpp dequantize_*), so a tool can start
from the committed GGUF without a C++ build (train_mtp.py).
"""
import os
import re
import struct

import numpy as np

TYPES = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8, "array": 9,
         "u64": 10, "i64": 11, "f64": 12}
NAMES = {v: k for k, v in TYPES.items()}
FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i", "f32": "<f", "bool": "<?",
       "u64": "<Q", "i64": "<q", "f64": "<d"}
GGML_F32, GGML_I32 = 0, 26
GGML_F16, GGML_Q8_0, GGML_Q2_K, GGML_IQ2_XXS = 1, 8, 10, 16
BLOCK = {GGML_F16: (1, 2), GGML_Q8_0: (32, 34), GGML_Q2_K: (256, 84), GGML_IQ2_XXS: (256, 66)}  # (elements, bytes)


def _iq2xxs_tables():
    """The IQ2_XXS grid (256 x 8 magnitudes) parsed from the engine's table, and the 128 sign
    masks (7 stored bits plus an even-parity bit 7), as engine/quant/iq2_tables.cpp builds them."""
    here = os.path.dirname(os.path.abspath(__file__))
    text = open(os.path.join(here, "..", "..", "engine", "quant", "iq2_tables.cpp")).read()
    body = text[text.index("kIq2xxsGrid[256] = {"):]
    vals = [int(h, 16) for h in re.findall(r"0x([0-9A-Fa-f]{16})", body[:body.index("};")])]
    assert len(vals) == 256
    grid = np.array([[(v >> (8 * j)) & 255 for j in range(8)] for v in vals], dtype=np.float32)
    signs = np.array([[-1.0 if ((i | (bin(i).count("1") & 1) << 7) >> j) & 1 else 1.0 for j in range(8)]
                      for i in range(128)], dtype=np.float32)
    return grid, signs


def _dequantize(raw, gt, n):
    """float32 [n] from the raw bytes of n elements of GGML type gt."""
    if gt == GGML_F16:
        return np.frombuffer(raw, dtype="<f2", count=n).astype(np.float32)
    if gt == GGML_Q8_0:
        b = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "i1", 32)]), count=n // 32)
        return (b["d"].astype(np.float32)[:, None] * b["qs"].astype(np.float32)).reshape(-1)
    if gt == GGML_Q2_K:
        b = np.frombuffer(raw, dtype=np.dtype([("scales", "u1", 16), ("qs", "u1", 64), ("d", "<f2"), ("dmin", "<f2")]),
                          count=n // 256)
        e = np.arange(256)
        half, k, l = e // 128, (e % 128) // 32, e % 32
        sc = b["scales"][:, e // 16]
        dl = b["d"].astype(np.float32)[:, None] * (sc & 15).astype(np.float32)
        ml = b["dmin"].astype(np.float32)[:, None] * (sc >> 4).astype(np.float32)
        q = (b["qs"][:, half * 32 + l] >> (2 * k)) & 3
        return (dl * q.astype(np.float32) - ml).reshape(-1)
    if gt == GGML_IQ2_XXS:
        grid, signs = _iq2xxs_tables()
        b = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "<u4", 16)]), count=n // 256)
        aux = b["qs"].reshape(-1, 8, 2)  # per 32-element group: 4 grid indices, then 4 x 7 sign bits + 4-bit scale
        d = b["d"].astype(np.float32)[:, None]
        db = d * (0.5 + (aux[..., 1] >> 28).astype(np.float32)) * np.float32(0.25)  # [blocks, 8]
        l = np.arange(4)
        gi = (aux[..., 0:1] >> (8 * l)) & 255  # [blocks, 8, 4]
        si = (aux[..., 1:2] >> (7 * l)) & 127
        vals = db[..., None, None] * grid[gi] * signs[si]  # [blocks, 8, 4, 8]
        return vals.astype(np.float32).reshape(-1)
    raise ValueError("GGML type %d is not decoded here" % gt)


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
    os.replace(path + ".tmp", path)


def _parse(data):
    """The header of a GGUF in memory: (metadata as (key, type name, value) triples, arrays as
    (element type name, list); tensor infos (name, dims, ggml type, offset); the data offset)."""
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
            return (et, [value(et) for _ in range(n)])
        return take(FMT[t])

    assert data[:4] == b"GGUF"
    p = 4
    take("<I")
    nt, nk = take("<Q"), take("<Q")
    meta = []
    for _ in range(nk):
        k = string()
        t = NAMES[take("<I")]
        meta.append((k, t, value(t)))
    infos = []
    for _ in range(nt):
        name = string()
        nd = take("<I")
        dims = [take("<Q") for _ in range(nd)]
        gt = take("<I")
        off = take("<Q")
        infos.append((name, dims, gt, off))
    align = dict((k, v) for k, _, v in meta).get("general.alignment", 32)
    return meta, infos, (p + align - 1) // align * align


def read_metadata(path):
    """The metadata of a GGUF as (key, type name, value) triples (arrays as (element type, list)),
    in file order: what write() takes to copy it."""
    return _parse(open(path, "rb").read())[0]


def read(path, dequantize=False):
    """Returns (metadata dict key -> value, tensors dict name -> np.ndarray shaped dims reversed).
    With `dequantize` the quantized types of BLOCK come back as float32; otherwise only F32/I32."""
    data = open(path, "rb").read()
    typed, infos, base = _parse(data)
    meta = {k: (v[1] if t == "array" else v) for k, t, v in typed}
    tensors = {}
    for name, dims, gt, off in infos:
        n = int(np.prod(dims))
        if dequantize and gt in BLOCK:
            per, nb = BLOCK[gt]
            raw = data[base + off:base + off + n // per * nb]
            tensors[name] = _dequantize(raw, gt, n).reshape(list(reversed(dims)))
            continue
        if gt not in (GGML_F32, GGML_I32):
            raise ValueError("%s: tensor %s has type %d; only F32/I32 are read here" % (path, name, gt))
        dt = np.float32 if gt == GGML_F32 else np.int32
        tensors[name] = np.frombuffer(data, dtype=dt, count=n, offset=base + off).reshape(list(reversed(dims)))
    return meta, tensors
