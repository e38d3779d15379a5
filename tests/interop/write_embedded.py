#!/usr/bin/env python3
"""Writes a table into an embedded `pipeline` catalog with PyIceberg, as another tool would.

Creates TABLE (namespace.name; the namespace is created when missing) with PyIceberg's own
default location under the warehouse, given as a `file://` URL, and appends three rows twice
(two snapshots). Prints one JSON document: {"location": ..., "files": [every data file of the
current snapshot, as PyIceberg recorded it]}. Used by tests/it/deletion.rs.

    python3 tests/interop/write_embedded.py CATALOG_DB WAREHOUSE_DIR CATALOG_NAME TABLE
"""

import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError


def main() -> None:
    db, warehouse, name, table = sys.argv[1:5]
    catalog = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    namespace = table.split(".")[0]
    try:
        catalog.create_namespace(namespace)
    except NamespaceAlreadyExistsError:
        pass
    rows = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "note": pa.array(["a", "b", "c"], pa.string()),
        }
    )
    created = catalog.create_table(table, schema=rows.schema)
    created.append(rows)
    created.append(rows)
    created = catalog.load_table(table)
    files = [task.file.file_path for task in created.scan().plan_files()]
    print(json.dumps({"location": created.location(), "files": files}))


if __name__ == "__main__":
    main()
