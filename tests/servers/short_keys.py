"""An AWS `credential_process` handing out short-lived keys: `short_keys.py KEYS_FILE SECONDS`.

Every call makes a new key pair valid for SECONDS, appends `KEY SECRET EXPIRATION` (epoch
seconds) to KEYS_FILE, and prints the pair in the credential_process format (Version 1, with
`Expiration`). tests/servers/sigv4_proxy.py --keys-file KEYS_FILE accepts exactly these keys,
each until it expires: a client that keeps using a key past its expiry is refused.
"""
import datetime, json, sys, time, uuid

path, seconds = sys.argv[1], float(sys.argv[2])
key = "AKIASHORT" + uuid.uuid4().hex[:11].upper()
secret = "short-" + uuid.uuid4().hex
expires = time.time() + seconds
with open(path, "a") as f:
    f.write(f"{key} {secret} {expires}\n")
print(json.dumps({
    "Version": 1,
    "AccessKeyId": key,
    "SecretAccessKey": secret,
    "Expiration": datetime.datetime.fromtimestamp(expires, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
}))
