#!/usr/bin/env python3
"""Another writer that changes a REST catalog table's metadata and not its data: PyIceberg
sets a table property (as a server's or another tool's maintenance might).

    python3 tests/interop/touch_rest.py URI ns.table

S3 access comes from S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
Prints the new metadata location. Used by tests/it/journal_recovery.rs.
"""

import os
import sys
import uuid

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
    with table.transaction() as tx:
        tx.set_properties({"touched-by": str(uuid.uuid4())})
    print(table.refresh().metadata_location)


if __name__ == "__main__":
    main()
