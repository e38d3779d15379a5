"""A REST catalog server that misbehaves on purpose, for the client's tests:
`misbehaving_rest.py --mode MODE [--to URL] [--log FILE] [--exit-with-parent]`.

Modes:
  * `record`: answers every request 200 `{}` and appends `METHOD PATH HEADERS-AS-JSON BODY` to
    --log (a host that must never be reached: whatever it logs leaked there);
  * `redirect`: answers every request `307 Temporary Redirect` to --to + the request's path;
  * `huge`: answers `/v1/config` with an endless JSON body;
  * `circular`: a catalog with one namespace whose listings always give the same
    `next-page-token`.
It prints its port on stdout when it listens.
"""
from serving import serve  # first: it notes the parent process
import argparse, json, os, sys  # noqa: E402
from http.server import BaseHTTPRequestHandler  # noqa: E402


def handler(args):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def reply(self, status, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def endless(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b'{"defaults": {"padding": "' + b"x" * (1 << 20)
            try:
                while True:
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode(errors="replace") if length else ""
            path = self.path.split("?")[0]
            if args.mode == "record":
                with open(args.log, "a") as f:
                    f.write(f"{self.command} {self.path} {json.dumps(dict(self.headers))} {body}\n")
                return self.reply(200, {})
            if args.mode == "redirect":
                return self.reply(307, {}, [("Location", args.to + self.path)])
            if args.mode == "huge" and path == "/v1/config":
                return self.endless()
            if path == "/v1/config":
                return self.reply(200, {"defaults": {}, "overrides": {}})
            if args.mode == "circular" and path.endswith("/namespaces"):
                return self.reply(200, {"namespaces": [["a"]], "next-page-token": "again"})
            if args.mode == "circular" and path.endswith("/tables"):
                return self.reply(200, {"identifiers": [], "next-page-token": "again"})
            return self.reply(404, {"error": {"message": "not here", "type": "NoSuchTableException",
                                              "code": 404}})

        do_GET = do_POST = do_HEAD = do_DELETE = handle_any

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True,
                        choices=["record", "redirect", "huge", "circular"])
    parser.add_argument("--to", default="")
    parser.add_argument("--log", default=os.devnull)
    parser.add_argument("--exit-with-parent", action="store_true")
    args = parser.parse_args()
    serve(handler(args), 0, args.exit_with_parent)


if __name__ == "__main__":
    sys.exit(main())
