#!/usr/bin/env python3
"""Reads every table of an embedded `pipeline` catalog with two independent readers.

* PyIceberg's SqlCatalog, on the same SQLite file and catalog name as the engine;
* DuckDB's iceberg extension, from each table's current metadata file.

Prints one JSON document: {"ns.table": {"pyiceberg": {"rows": N, "sums": {...}},
"duckdb": {...}}} where "sums" holds the sum of every integer and decimal column as a
string (null when the column has no values). Used by tests/it/interop.rs.

    python3 tests/interop/read_tables.py CATALOG_DB WAREHOUSE_DIR CATALOG_NAME
"""

import glob
import json
import os
import sys

import pyarrow.compute as pc
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog


def summable(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_decimal(t)


def as_text(v):
    return None if v is None else str(v)


def duckdb_connection():
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for module in (duckdb_extension_avro, duckdb_extension_iceberg):
        folder = os.path.join(os.path.dirname(module.__file__), "extensions")
        path = glob.glob(os.path.join(folder, "*", "*.duckdb_extension"))[0]
        con.execute(f"LOAD '{path}'")
    return con


def main() -> None:
    db, warehouse, name = sys.argv[1], sys.argv[2], sys.argv[3]
    catalog = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    con = duckdb_connection()
    out = {}
    for ns in catalog.list_namespaces():
        for ident in catalog.list_tables(ns):
            table = catalog.load_table(ident)
            key = ".".join(ident)
            data = table.scan().to_arrow()
            cols = [f.name for f in data.schema if summable(f.type)]
            py = {
                "rows": data.num_rows,
                "sums": {c: as_text(pc.sum(data[c]).as_py()) for c in cols},
            }
            select = ", ".join(["count(*)"] + [f'sum("{c}")' for c in cols])
            row = con.execute(
                f"SELECT {select} FROM iceberg_scan('{table.metadata_location}')"
            ).fetchone()
            dd = {
                "rows": row[0],
                "sums": {c: as_text(v) for c, v in zip(cols, row[1:])},
            }
            out[key] = {"pyiceberg": py, "duckdb": dd}
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
