"""A recording (and optionally credential-vending) reverse proxy: `vending_proxy.py --target URL
[--vend-key KEY --vend-secret SECRET --vend-prefix PREFIX] [--port P] [--log FILE]
[--exit-with-parent]`.

Every request is forwarded to the target as it came (signature headers included: moto does
not check them), and its answer returned as it came, but for one change: with `--vend-key`,
an answer carrying a table (`metadata` and `metadata-location`, as LoadTable and CreateTable
answer) to a request that asked for vended credentials (`X-Iceberg-Access-Delegation:
vended-credentials`) gets `storage-credentials` for PREFIX with KEY and SECRET, as a catalog
vending credentials would. With --log it appends one line per request:
`METHOD PATH key=KEY delegation=VALUE` (the access key id of its SigV4 `Authorization`, `-`
without one). Put in front of rustberg it plays a vending catalog; in front of moto's S3 it
records which key signed each data request.
"""
from serving import Replying, line_log, serve  # first: it notes the parent process
import argparse, http.client, json, re, sys  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def vend(args, data):
    """`data` (a JSON answer) with storage-credentials added, when it carries a table."""
    try:
        answer = json.loads(data)
    except ValueError:
        return data
    if not isinstance(answer, dict) or "metadata" not in answer or "metadata-location" not in answer:
        return data
    answer["storage-credentials"] = [{"prefix": args.vend_prefix, "config": {
        "s3.access-key-id": args.vend_key, "s3.secret-access-key": args.vend_secret}}]
    return json.dumps(answer).encode()


def handler(args, log):
    target = urlsplit(args.target)

    class Handler(Replying):
        def handle_one(self):
            body = self.body()
            headers = {k.lower(): v.strip() for k, v in self.headers.items()}
            signer = CREDENTIAL.search(headers.get("authorization", ""))
            delegation = headers.get("x-iceberg-access-delegation", "-")
            log(f"{self.command} {self.path} key={signer.group(1) if signer else '-'} delegation={delegation}")
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
            forwarded = {k: v for k, v in headers.items() if k not in HOP}
            conn.request(self.command, target.path.rstrip("/") + self.path, body=body or None,
                         headers=forwarded)
            response = conn.getresponse()
            data = response.read()
            kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP}
            if args.vend_key and "vended-credentials" in delegation and response.status == 200:
                data = vend(args, data)
            self.relay(response, kept, data)
            conn.close()

        def body(self):
            """The request's body, sent with a length or in chunks."""
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline().strip():
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_one

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--vend-key")
    ap.add_argument("--vend-secret")
    ap.add_argument("--vend-prefix")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--exit-with-parent", action="store_true")
    args = ap.parse_args()
    log = line_log(args.log)
    serve(handler(args, log), args.port, args.exit_with_parent)


if __name__ == "__main__":
    sys.exit(main())
