#!/usr/bin/env python3
"""Another writer on S3 Tables, as its own maintenance is: moves a table to a new metadata
file (a copy of its current one) by the table bucket's compare-and-set, without any pipeline
command (so no pending publish is resolved on the way).

    python3 tests/interop/move_s3table.py TABLE_BUCKET_ARN ns table

The endpoint comes from S3_ENDPOINT, credentials from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_REGION. Prints the new metadata location. Used by
tests/it/journal_recovery.rs.
"""

import os
import sys
import uuid

import boto3


def main() -> None:
    arn, namespace, name = sys.argv[1], sys.argv[2], sys.argv[3]
    settings = dict(
        endpoint_url=os.environ["S3_ENDPOINT"],
        region_name=os.environ["AWS_REGION"],
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    )
    tables = boto3.client("s3tables", **settings)
    s3 = boto3.client("s3", **settings)
    current = tables.get_table_metadata_location(
        tableBucketARN=arn, namespace=namespace, name=name
    )
    location = current["metadataLocation"]
    bucket, key = location.removeprefix("s3://").split("/", 1)
    new_key = f"{key.rsplit('/', 1)[0]}/99999-{uuid.uuid4()}.metadata.json"
    s3.copy_object(Bucket=bucket, Key=new_key, CopySource={"Bucket": bucket, "Key": key})
    new_location = f"s3://{bucket}/{new_key}"
    tables.update_table_metadata_location(
        tableBucketARN=arn,
        namespace=namespace,
        name=name,
        versionToken=current["versionToken"],
        metadataLocation=new_location,
    )
    print(new_location)


if __name__ == "__main__":
    main()
