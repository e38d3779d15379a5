"""A SigV4-verifying reverse proxy: `sigv4_proxy.py --target URL (--key KEY --secret SECRET |
--keys-file FILE) --region R --service S [--port P] [--log FILE] [--exit-with-parent]`.

It stands where AWS's S3 Tables or Glue Iceberg REST endpoint would: every request must carry
an AWS Signature Version 4 that botocore, recomputing it with the known secret, finds equal.
Checked, in order (any failure answers 403 `SignatureDoesNotMatch` and forwards nothing):
  * an `Authorization: AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/SERVICE/aws4_request,
    SignedHeaders=..., Signature=...` header, for this key (or, with --keys-file, one of the
    keys tests/servers/short_keys.py issued, not yet expired), region and service;
  * `host` and `x-amz-date` among the signed headers; the date within 15 minutes of now and
    equal to the credential's date;
  * `x-amz-content-sha256`, when sent, signed and equal to the SHA-256 (hex) of the body
    actually received, or, for S3, `UNSIGNED-PAYLOAD` (without it, botocore hashes the body);
  * the signature botocore's `SigV4Auth` (`S3SigV4Auth` for S3) computes over the method, the raw path and query, the
    signed headers and the payload hash.
Verified requests go to the target without the signature headers (with them for `--service
s3`: it stands in front of moto's S3, which refuses some unsigned requests). As AWS's endpoints, it may
serve one warehouse under a path: with `--warehouse W` a `/v1/config` must ask for `warehouse=W`
(the target serves one warehouse, so the query is not passed on), and with `--strip-prefix
/iceberg` requests outside that path are refused (404) and the prefix is removed. With
`--refuse-path P`, requests whose path holds P are refused as API Gateway refuses a signature,
echoing the canonical request (session token included). The proxy prints its port
on stdout when it listens; with --log it appends one line per request: `ok|refused METHOD PATH
key=KEY [reason]`.
"""
from serving import Replying, line_log, serve  # first: it notes the parent process
import argparse, datetime, hashlib, hmac, http.client, json, re, sys, time  # noqa: E402
from urllib.parse import parse_qs, urlsplit  # noqa: E402

from botocore.auth import S3SigV4Auth, SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?"
    r"SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$")
SIGNATURE = {"authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}
HOP = SIGNATURE | {"host", "connection", "keep-alive", "transfer-encoding", "content-length"}


def check(args, method, path, headers, body):
    """None when the request's signature is valid, else why not."""
    auth = headers.get("authorization", "")
    m = AUTH.match(auth)
    if not m:
        return "no AWS4-HMAC-SHA256 Authorization header"
    key, day, region, service, signed, signature = m.groups()
    secret = args.secret
    if args.keys_file:
        issued = {}
        with open(args.keys_file) as f:
            for line in f:
                k, s, expires = line.split()
                issued[k] = (s, float(expires))
        if key not in issued:
            return f"unknown access key {key}"
        secret, expires = issued[key]
        if time.time() > expires:
            return f"the access key {key} expired {time.time() - expires:.1f}s ago"
    elif key != args.key:
        return f"unknown access key {key}"
    if (region, service) != (args.region, args.service):
        return f"credential scope {key}/{region}/{service} is not {args.region}/{args.service}"
    names = signed.split(";")
    for required in ("host", "x-amz-date") + (("x-amz-content-sha256",) if "x-amz-content-sha256" in headers else ()):
        if required not in names:
            return f"{required} is not signed"
    amz_date = headers.get("x-amz-date", "")
    try:
        at = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return f"bad x-amz-date {amz_date!r}"
    if abs((datetime.datetime.now(datetime.timezone.utc) - at).total_seconds()) > 900 or amz_date[:8] != day:
        return "x-amz-date is not now"
    sent_hash = headers.get("x-amz-content-sha256", hashlib.sha256(body).hexdigest())
    unsigned = service == "s3" and sent_hash == "UNSIGNED-PAYLOAD"
    if not unsigned and sent_hash != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 is not the SHA-256 of the body"
    missing = [n for n in names if n not in headers]
    if missing:
        return f"signed headers not sent: {missing}"
    request = AWSRequest(method=method, url=f"http://{headers['host']}{path}",
                         headers={n: headers[n] for n in names}, data=body)
    request.context["timestamp"] = amz_date
    # S3 signs its path encoded once, as sent; the other services twice, normalized.
    scheme = S3SigV4Auth if service == "s3" else SigV4Auth
    signer = scheme(Credentials(key, secret, headers.get("x-amz-security-token")), service, region)
    canonical = signer.canonical_request(request)
    if signer.signed_headers(signer.headers_to_sign(request)) != signed:
        return "the signed header list is not canonical"
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, signature):
        return "signature mismatch"
    return None


def handler(args, log):
    target = urlsplit(args.target)

    class Handler(Replying):
        def handle_one(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v.strip() for k, v in self.headers.items()}
            reason = check(args, self.command, self.path, headers, body)
            echo = not reason and args.refuse_path and args.refuse_path in self.path and self.command != "HEAD"
            if echo:
                # As API Gateway answers a signature it does not accept: with the canonical
                # request, signed headers (the session token) included.
                signed = sorted(n for n in headers if n == "host" or n.startswith("x-amz"))
                canonical = "\n".join([self.command, self.path] + [f"{n}:{headers[n]}" for n in signed])
                reason = ("Check your AWS Secret Access Key and signing method. The Canonical String "
                          f"for this request should have been\n'{canonical}'")
            path = self.path
            if not reason and args.strip_prefix:
                if not path.startswith(args.strip_prefix + "/"):
                    log(f"missing {self.command} {self.path}")
                    return self.reply(404, {"Content-Type": "application/json"}, b'{"error": {"message": "no such route", "type": "NotFound", "code": 404}}')
                path = path[len(args.strip_prefix):]
            if not reason and args.warehouse and path.startswith("/v1/config"):
                query = parse_qs(urlsplit(path).query)
                if query.get("warehouse") != [args.warehouse]:
                    log(f"unknown-warehouse {self.command} {self.path}")
                    return self.reply(400, {"Content-Type": "application/json"}, json.dumps({"error": {"message": f"this endpoint serves warehouse {args.warehouse}", "type": "BadRequestException", "code": 400}}).encode())
                path = "/v1/config"
            signer = AUTH.match(headers.get("authorization", ""))
            who = signer.group(1) if signer else "-"
            log(f"{'refused' if reason else 'ok'} {self.command} {self.path} key={who}" + (f" {reason}" if reason else ""))
            if reason:
                payload = json.dumps({"error": {
                    "message": f"The request signature we calculated does not match the signature you provided ({reason})",
                    "type": "SignatureDoesNotMatch", "code": 403}}).encode()
                return self.reply(403, {"Content-Type": "application/json"}, payload)
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
            # moto's S3 refuses some unsigned requests (DELETE): S3 gets the signature as sent.
            dropped = HOP - SIGNATURE if args.service == "s3" else HOP
            forwarded = {k: v for k, v in headers.items() if k not in dropped}
            conn.request(self.command, target.path.rstrip("/") + path, body=body or None, headers=forwarded)
            response = conn.getresponse()
            data = response.read()
            kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP}
            self.relay(response, kept, data)
            conn.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_one

    return Handler


def main():
    ap = argparse.ArgumentParser()
    for name in ("--target", "--region", "--service"):
        ap.add_argument(name, required=True)
    ap.add_argument("--key")
    ap.add_argument("--secret")
    ap.add_argument("--keys-file", help="accept the keys tests/servers/short_keys.py issued, each until it expires")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--warehouse")
    ap.add_argument("--strip-prefix", default="")
    ap.add_argument("--refuse-path", help="refuse (403, echoing the canonical request) requests whose path holds this")
    ap.add_argument("--exit-with-parent", action="store_true")
    args = ap.parse_args()
    log = line_log(args.log)
    serve(handler(args, log), args.port, args.exit_with_parent)


if __name__ == "__main__":
    sys.exit(main())
