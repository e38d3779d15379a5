#!/usr/bin/env python3
"""Every row of every table of an embedded `pipeline` catalog, as PyIceberg reads it (by field
id, independently of the engine), for comparing two warehouses row for row.

    python3 tests/interop/dump_rows.py CATALOG_DB WAREHOUSE_DIR CATALOG_NAME [SKIP_COLUMN...]

Prints {"ns.table": {"columns": [...], "rows": [[...], ...]}}: each row's values as text
(null as null), rows sorted; the columns named SKIP_COLUMN (run ids, load times, paths that
differ between two projects by nature) are left out. Used by tests/it/ballista.rs.
"""

import json
import sys

from pyiceberg.catalog.sql import SqlCatalog


def text(v):
    return None if v is None else str(v)


def main() -> None:
    db, warehouse, name, skip = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4:])
    catalog = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    out = {}
    for ns in catalog.list_namespaces():
        for ident in catalog.list_tables(ns):
            data = catalog.load_table(ident).scan().to_arrow()
            columns = [c for c in data.column_names if c not in skip]
            values = [data[c].to_pylist() for c in columns]
            rows = sorted(
                ([text(col[i]) for col in values] for i in range(data.num_rows)),
                key=lambda r: [(v is None, v or "") for v in r],
            )
            out[".".join(ident)] = {"columns": columns, "rows": rows}
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
