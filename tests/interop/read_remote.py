#!/usr/bin/env python3
"""Reads tables of a remote catalog with PyIceberg, independently of the engine.

    python3 tests/interop/read_remote.py rest URI TABLE...          (PyIceberg RestCatalog)
    python3 tests/interop/read_remote.py static TABLE=METADATA...   (StaticTable per table)

S3 access comes from S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
With SIGV4_SIGNING_NAME set, PyIceberg signs its catalog requests with SigV4 (that name, the
region AWS_REGION, the same credentials).
With READ_BRANCH set, each table is read at the head of that branch (an environment,
`pipeline run --env NAME`), found by name; a table without it is null.
Prints {"ns.table": {"rows": N, "sums": {...}}}, "sums" holding the sum of every integer and
decimal column as a string (null when the column has no values). Used by
tests/it/remote_catalogs.rs.
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable


def summary(table):
    branch = os.environ.get("READ_BRANCH")
    if branch:
        head = table.snapshot_by_name(branch)
        if head is None:
            return None
        data = table.scan(snapshot_id=head.snapshot_id).to_arrow()
    else:
        data = table.scan().to_arrow()
    cols = [f.name for f in data.schema if pa.types.is_integer(f.type) or pa.types.is_decimal(f.type)]
    sums = {}
    for c in cols:
        v = pc.sum(data[c]).as_py()
        sums[c] = None if v is None else str(v)
    return {"rows": data.num_rows, "sums": sums}


def main() -> None:
    props = {
        "s3.endpoint": os.environ["S3_ENDPOINT"],
        "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "s3.region": os.environ["AWS_REGION"],
        "s3.force-virtual-addressing": "false",
    }
    if os.environ.get("SIGV4_SIGNING_NAME"):
        props["rest.sigv4-enabled"] = "true"
        props["rest.signing-name"] = os.environ["SIGV4_SIGNING_NAME"]
        props["rest.signing-region"] = os.environ["AWS_REGION"]
    mode, args = sys.argv[1], sys.argv[2:]
    out = {}
    if mode == "rest":
        catalog = RestCatalog("rest", uri=args[0], **props)
        for name in args[1:]:
            out[name] = summary(catalog.load_table(name))
    else:
        for arg in args:
            name, location = arg.split("=", 1)
            out[name] = summary(StaticTable.from_metadata(location, properties=props))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
