#!/usr/bin/env python3
"""Looks for values in every file under a folder, after decompression.

    python3 tests/erase/find_values.py DIR COLUMN=INTEGER TEXT [TEXT ...]

Parquet files are read with pyarrow: a hit is a row whose COLUMN equals INTEGER, or any string
value containing one of the TEXTs. Avro files (Iceberg manifests and manifest lists) are read
block by block with their codec (null or deflate) undone, and searched as bytes; every other
file (metadata JSON, the SQLite catalog) is searched as it is. Prints a JSON list of
`{"file", "found"}`; empty when nothing holds the values.
"""

import json
import sys
import zlib
from pathlib import Path

import pyarrow.parquet as pq


def read_long(data, pos):
    shift, result = 0, 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return (result >> 1) ^ -(result & 1), pos


def avro_bytes(data):
    """The decompressed content of an Avro object container file."""
    assert data[:4] == b"Obj\x01"
    pos, meta = 4, {}
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = read_long(data, pos)
        for _ in range(count):
            klen, pos = read_long(data, pos)
            key = data[pos:pos + klen].decode()
            pos += klen
            vlen, pos = read_long(data, pos)
            meta[key] = data[pos:pos + vlen]
            pos += vlen
    pos += 16  # sync marker
    codec = meta.get("avro.codec", b"null")
    out = bytearray(meta.get("avro.schema", b""))
    while pos < len(data):
        _, pos = read_long(data, pos)
        size, pos = read_long(data, pos)
        block = data[pos:pos + size]
        pos += size + 16
        out += zlib.decompress(block, -15) if codec == b"deflate" else block
    return bytes(out)


def main():
    folder, column_value, texts = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    column, value = column_value.split("=")
    value = int(value)
    hits = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        found = []
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            for name in table.column_names:
                values = table.column(name).to_pylist()
                if name == column and value in values:
                    found.append(f"{column}={value}")
                for v in values:
                    if isinstance(v, str) and any(t in v for t in texts):
                        found.append(f"{name}: {v}")
        else:
            data = path.read_bytes()
            if path.suffix == ".avro":
                data = avro_bytes(data)
            found += [t for t in texts if t.encode() in data]
        if found:
            hits.append({"file": str(path.relative_to(folder)), "found": sorted(set(found))})
    print(json.dumps(hits))


if __name__ == "__main__":
    main()
