#!/usr/bin/env python3
"""Reads one table of an embedded `pipeline` catalog with PyIceberg, on `main` and on a
branch (an environment, `pipeline run --env NAME`), by the branch's name.

Prints {"main": [values of COLUMN, sorted], "branch": [...] or null when there is no such
branch}.

    python3 tests/interop/read_branch.py CATALOG_DB WAREHOUSE_DIR CATALOG_NAME TABLE BRANCH COLUMN
"""

import json
import sys

from pyiceberg.catalog.sql import SqlCatalog


def values(table, snapshot_id, column):
    rows = table.scan(snapshot_id=snapshot_id, selected_fields=(column,)).to_arrow()
    return sorted(str(v) for v in rows.column(column).to_pylist())


def main():
    db, warehouse, name, table_name, branch, column = sys.argv[1:7]
    catalog = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    table = catalog.load_table(table_name)
    main_snapshot = table.current_snapshot()
    head = table.snapshot_by_name(branch)
    print(
        json.dumps(
            {
                "main": values(table, main_snapshot.snapshot_id, column),
                "branch": None if head is None else values(table, head.snapshot_id, column),
            }
        )
    )


if __name__ == "__main__":
    main()
