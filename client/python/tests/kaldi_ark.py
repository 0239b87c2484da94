"""Kaldi binary float-matrix archives (what `gmmscore score --output ark:`
writes and `--features ark:` reads), exact to the bit both ways, for
comparing the client's answers with the offline engine.

    write_matrices(path, {"utt1": frames})      # float32
    write_matrix(path, transform)               # one matrix, no key
    matrices = read_matrices(path)              # {"utt1": ndarray}

An entry is "key \\0B" then "FM " (float32) or "DM " (float64), then rows and
cols as "\\x04" + little-endian int32 each, then the values row-major.
"""
import struct

import numpy as np

_KINDS = {b"FM ": np.dtype("<f4"), b"DM ": np.dtype("<f8")}


def _binary_matrix(matrix):
    values = np.ascontiguousarray(matrix, dtype="<f4")
    rows, cols = values.shape
    return (b"\0BFM \x04" + struct.pack("<i", rows) + b"\x04" + struct.pack("<i", cols)
            + values.tobytes())


def write_matrices(path, matrices):
    with open(path, "wb") as out:
        for key, matrix in matrices.items():
            out.write(key.encode() + b" " + _binary_matrix(matrix))


def write_matrix(path, matrix):
    """One matrix alone (a Kaldi matrix file, e.g. an fMLLR transform)."""
    with open(path, "wb") as out:
        out.write(_binary_matrix(matrix))


def read_matrices(path):
    with open(path, "rb") as file:
        data = file.read()
    matrices, at = {}, 0
    while at < len(data):
        space = data.index(b" ", at)
        key = data[at:space].decode()
        assert data[space + 1:space + 3] == b"\0B", f"{path}: {key} is not binary"
        kind = data[space + 3:space + 6]
        dtype = _KINDS[kind]
        assert data[space + 6] == 4 and data[space + 11] == 4
        rows = struct.unpack("<i", data[space + 7:space + 11])[0]
        cols = struct.unpack("<i", data[space + 12:space + 16])[0]
        start = space + 16
        end = start + rows * cols * dtype.itemsize
        matrices[key] = np.frombuffer(data[start:end], dtype=dtype).reshape(rows, cols).astype(
            np.float32 if kind == b"FM " else np.float64)
        at = end
    return matrices
