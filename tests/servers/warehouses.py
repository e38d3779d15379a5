"""One address serving several warehouses, as AWS's regional S3 Tables and Glue Iceberg REST
endpoints do: `warehouses.py --warehouse NAME=TARGET_URL ... [--port P] [--log FILE]
[--exit-with-parent]`.

A `/v1/config?warehouse=NAME` is answered by NAME's target (a REST catalog serving one
warehouse), with `overrides.prefix` set to NAME (followed by the target's own prefix, if it
has one); every later request `/v1/NAME/...` goes to that target as `/v1/...`. An unknown
warehouse, or a `/v1/config` without one, is refused with 400, as AWS refuses it. The server
prints its port on stdout when it listens; with --log it appends `METHOD PATH -> NAME` per
request.
"""
from serving import Replying, line_log, serve  # first: it notes the parent process
import argparse, http.client, json, sys  # noqa: E402
from urllib.parse import parse_qs, quote, unquote, urlsplit  # noqa: E402

HOP = {"host", "connection", "keep-alive", "transfer-encoding", "content-length"}


def handler(targets, log):
    class Handler(Replying):
        def handle_one(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            split = urlsplit(self.path)
            if split.path == "/v1/config":
                name = (parse_qs(split.query).get("warehouse") or [None])[0]
                if name not in targets:
                    return self.refuse(400, f"unknown warehouse {name!r}; this endpoint serves {sorted(targets)}")
                status, headers, data = self.forward(targets[name], "/v1/config", body)
                if status == 200:
                    config = json.loads(data)
                    own = config.get("overrides", {}).get("prefix") or config.get("defaults", {}).get("prefix")
                    config.setdefault("overrides", {})["prefix"] = quote(name, safe="") + (f"/{own}" if own else "")
                    data = json.dumps(config).encode()
                log(f"{self.command} {self.path} -> {name}")
                return self.reply(status, headers, data)
            parts = split.path.split("/", 3)
            name = unquote(parts[2]) if len(parts) > 2 and parts[1] == "v1" else None
            if name not in targets:
                return self.refuse(404, f"no route {split.path}")
            rest = "/v1/" + (parts[3] if len(parts) > 3 else "")
            log(f"{self.command} {self.path} -> {name}")
            query = f"?{split.query}" if split.query else ""
            self.reply(*self.forward(targets[name], rest + query, body))

        def forward(self, target, path, body):
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            conn.request(self.command, target.path.rstrip("/") + path, body=body or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP}
            conn.close()
            return response.status, kept, data

        def refuse(self, status, message):
            log(f"refused {self.command} {self.path}")
            payload = json.dumps({"error": {"message": message, "type": "BadRequestException", "code": status}})
            self.reply(status, {"Content-Type": "application/json"}, payload.encode())

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_one

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouse", action="append", required=True, help="NAME=TARGET_URL")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--exit-with-parent", action="store_true")
    args = ap.parse_args()
    targets = {}
    for entry in args.warehouse:
        name, url = entry.split("=", 1)
        targets[name] = urlsplit(url)
    log = line_log(args.log)
    serve(handler(targets, log), args.port, args.exit_with_parent)


if __name__ == "__main__":
    sys.exit(main())
