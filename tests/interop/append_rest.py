#!/usr/bin/env python3
"""Another writer: PyIceberg appends the first row of a REST catalog table to it again.

    python3 tests/interop/append_rest.py URI ns.table

S3 access comes from S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
Prints the new snapshot id. Used by tests/it/remote_catalogs.rs.
"""

import os
import sys

from pyiceberg.catalog.rest import RestCatalog


def main() -> None:
    uri, name = sys.argv[1], sys.argv[2]
    catalog = RestCatalog(
        "rest",
        uri=uri,
        **{
            "s3.endpoint": os.environ["S3_ENDPOINT"],
            "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
            "s3.region": os.environ["AWS_REGION"],
            "s3.force-virtual-addressing": "false",
        },
    )
    table = catalog.load_table(name)
    table.append(table.scan(limit=1).to_arrow())
    print(table.refresh().current_snapshot().snapshot_id)


if __name__ == "__main__":
    main()
