"""`moto_server -H HOST -p PORT`, with two S3 Tables responses reshaped to the AWS model.

moto 5.2.5 answers two S3 Tables operations in shapes that aws-sdk-s3tables, which enforces
the AWS model when deserializing, rejects:
  * GetTable: `managedByService` is a JSON boolean (model: string) -> "true"/"false".
  * UpdateTableMetadataLocation: `namespace` is a string (model: list of strings) and the ARN
    key is `tableArn` (model: `tableARN`).
Only successful responses to those two operations are rewritten; everything else passes
through untouched. With --exit-with-parent the server exits once its parent process is gone.
"""
import os

PARENT = os.getppid()  # read before the slow moto import, so an early parent death is still seen
import argparse, functools, json, threading, time  # noqa: E402

from werkzeug.serving import run_simple
from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


def reshaped(environ):  # GetTable or UpdateTableMetadataLocation, signed for s3tables (not S3)
    method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
    return "/s3tables/" in environ.get("HTTP_AUTHORIZATION", "") and (
        (method, path) == ("GET", "/get-table")
        or (method == "PUT" and path.startswith("/tables/") and path.endswith("/metadata-location")))


def fix(doc):
    if isinstance(doc.get("managedByService"), bool):
        doc["managedByService"] = str(doc["managedByService"]).lower()
    if isinstance(doc.get("namespace"), str):
        doc["namespace"] = [doc["namespace"]]
    if "tableArn" in doc:
        doc["tableARN"] = doc.pop("tableArn")
    return doc


def patched(app):
    def wsgi(environ, start_response):
        if not reshaped(environ):
            return app(environ, start_response)
        got, parts = [], []
        result = app(environ, lambda status, headers, exc_info=None: got.extend((status, headers)) or parts.append)
        try:
            body = b"".join(parts) + b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
        status, headers = got
        if status.startswith("200 "):
            body = json.dumps(fix(json.loads(body))).encode()
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]
    return wsgi


class QuietHandler(MotoRequestHandler):
    """No line on stderr per request: werkzeug's request log costs the server CPU that the
    benchmarks' clients, on the same cores, would be measured for."""

    def log_request(self, *args, **kwargs):
        pass


def exit_with_parent():
    while os.getppid() == PARENT:
        time.sleep(1)
    os._exit(0)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("-H", "--host", default="127.0.0.1")
    p.add_argument("-p", "--port", type=int, default=5000)
    p.add_argument("--exit-with-parent", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto_server does
    if args.exit_with_parent:
        threading.Thread(target=exit_with_parent, daemon=True).start()
    dispatcher = DomainDispatcherApplication(create_backend_app)
    # Which backend serves a host is fixed: moto tries every service's URL patterns on each
    # request; remembering the answer per host saves that.
    dispatcher.get_backend_for_host = functools.lru_cache(maxsize=1024)(dispatcher.get_backend_for_host)
    app = patched(dispatcher)
    run_simple(args.host, args.port, app, threaded=True, request_handler=QuietHandler)
