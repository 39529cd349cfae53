"""A scripted HTTP server on loopback for the retry and error cases of the client.

Each request takes the next scripted answer (the last one repeats): (status, body, delay).
Every request is recorded with its headers and raw body. GET /version, which the client
asks first, is answered apart (``version``: by default a service of the driver's release)
and recorded in ``version_requests``, so the script and ``requests`` hold the API calls.
"""

import http.server
import json
import threading
import time

from magnum_gitops_driver import __version__
from magnum_gitops_driver.event import API_VERSION


class Answer(object):
    def __init__(self, status=200, body=None, delay=0.0, raw=None):
        self.status = status
        self.body = body
        self.delay = delay
        self.raw = raw


class ScriptedServer(object):

    def __init__(self, answers, port=0, version=None):
        self.answers = list(answers)
        self.requests = []
        self.version = version or Answer(200, {"version": __version__,
                                               "eventAPIVersions": [API_VERSION]})
        self.version_requests = []
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = {"method": self.command, "path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body": body, "time": time.monotonic()}
                with server._lock:
                    if self.command == "GET" and self.path == "/version":
                        server.version_requests.append(request)
                        answer = server.version
                    else:
                        server.requests.append(request)
                        answer = (server.answers.pop(0) if len(server.answers) > 1
                                  else server.answers[0])
                if answer.delay:
                    time.sleep(answer.delay)
                data = answer.raw if answer.raw is not None else json.dumps(
                    answer.body if answer.body is not None else {}).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json"
                                     if answer.raw is None else "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = _serve
            do_POST = _serve

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
