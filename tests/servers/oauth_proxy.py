"""An OAuth2 token endpoint in front of a REST catalog: `oauth_proxy.py --target URL
--api-key KEY --client ID:SECRET --lifetime SECONDS [--revoke-first] [--log FILE]
[--exit-with-parent]`.

`POST /v1/oauth/tokens` (client credentials, form-encoded) hands out a new random token valid
for SECONDS (`expires_in`), to the one client it knows. Every other request must carry
`Authorization: Bearer TOKEN` with a token it handed out and that has not expired (with
--revoke-first the first token is refused from the start, as a revoked one would be); else it
answers 401 and forwards nothing. Accepted requests go to the target (a rustberg requiring
KEY) with `Authorization: Bearer KEY`. With --log it appends one line per request: `token N`,
`ok METHOD PATH` or `refused METHOD PATH reason`. It prints its port on stdout when it listens.
"""
from serving import serve  # first: it notes the parent process
import argparse, http.client, json, os, secrets, sys, threading, time  # noqa: E402
from http.server import BaseHTTPRequestHandler  # noqa: E402
from urllib.parse import parse_qs, urlsplit  # noqa: E402

HOP = {"authorization", "host", "connection", "keep-alive", "transfer-encoding", "content-length"}


def handler(args, log):
    issued = {}  # token -> expiry (epoch seconds)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def reply(self, status, body, extra=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in extra:
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def token(self, body):
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            client_id, client_secret = args.client.split(":", 1)
            if form.get("grant_type") != "client_credentials" or \
                    form.get("client_id") != client_id or form.get("client_secret") != client_secret:
                log("refused token request: unknown client")
                return self.reply(401, {"error": "invalid_client"})
            value = "tok-" + secrets.token_hex(16)
            with lock:
                issued[value] = time.time() + args.lifetime
                if args.revoke_first and len(issued) == 1:
                    issued[value] = 0
                n = len(issued)
            log(f"token {n}")
            return self.reply(200, {"access_token": value, "token_type": "bearer",
                                    "expires_in": int(args.lifetime)})

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.command == "POST" and urlsplit(self.path).path == "/v1/oauth/tokens":
                return self.token(body)
            auth = self.headers.get("Authorization", "")
            value = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
            with lock:
                expiry = issued.get(value)
            if expiry is None or time.time() >= expiry:
                why = "unknown token" if expiry is None else "expired token"
                log(f"refused {self.command} {self.path} {why}")
                return self.reply(401, {"error": {"message": f"Not authorized: {why}",
                                                  "type": "NotAuthorizedException", "code": 401}})
            log(f"ok {self.command} {self.path}")
            target = urlsplit(args.target)
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            headers["Authorization"] = f"Bearer {args.api_key}"
            conn.request(self.command, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            self.send_response(response.status)
            for k, v in response.getheaders():
                if k.lower() not in HOP:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_HEAD = do_DELETE = do_PUT = handle_any

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument("--lifetime", type=float, required=True)
    parser.add_argument("--revoke-first", action="store_true")
    parser.add_argument("--log", default=os.devnull)
    parser.add_argument("--exit-with-parent", action="store_true")
    args = parser.parse_args()
    write = threading.Lock()

    def log(line):
        with write, open(args.log, "a") as f:
            f.write(line + "\n")

    serve(handler(args, log), 0, args.exit_with_parent)


if __name__ == "__main__":
    sys.exit(main())
