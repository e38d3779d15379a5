"""What the tests' small HTTP servers share: listen on loopback, print the port on stdout (the
test reads it), and, with `exit_with_parent`, end when the test that started them ends (so a
test killed mid-way leaves no server behind). Import it first: it notes the parent at import.
"""
import os

PARENT = os.getppid()
import socket, threading, time  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402


def line_log(path):
    """A function appending one line to the file `path` (nothing when `path` is None), safe to
    call from the server's threads."""
    lock = threading.Lock()

    def log(line):
        if path:
            with lock, open(path, "a") as f:
                f.write(line + "\n")

    return log


def serve(handler, port=0, exit_with_parent=False):
    """Serves `handler` on 127.0.0.1:`port` (0: any free port) until the process ends."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    print(server.server_address[1], flush=True)
    if exit_with_parent:
        def watch():
            while os.getppid() == PARENT:
                time.sleep(0.5)
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    server.serve_forever()


class Replying(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler with `reply(status, headers, payload)` (no body for HEAD), and
    `relay(response, headers, payload)` for a proxy's answer from its target."""
    protocol_version = "HTTP/1.1"

    def setup(self):
        # A reply's headers and body are two writes on a connection kept alive: without
        # TCP_NODELAY the body waits for the client's delayed ACK of the headers (40 ms on
        # Linux), a stall no real server has, which would be measured as the client's time.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def log_message(self, *a):
        pass

    def reply(self, status, headers, payload):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def relay(self, response, headers, payload):
        """The target's `response` with `headers` and `payload`; to a HEAD, without a body but
        with the length the target gave (an object's size)."""
        if self.command != "HEAD":
            return self.reply(response.status, headers, payload)
        self.send_response(response.status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", response.getheader("content-length") or "0")
        self.end_headers()
