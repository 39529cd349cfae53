"""A real smart-HTTP Git remote: Debian's `git http-backend` (CGI) behind a small threaded
HTTP server with basic auth, holding one bare repository, as test/e2e's harness runs it
behind Go's net/http/cgi. It records when each push landed and what the branch then held,
for the figures (event -> pushed commit).
"""

import base64
import hmac
import http.server
import os
import subprocess
import threading
import time

from procs import free_port, run
from shimtests import service as shim_service

USER = "magnum-gitops"
BRANCH = "main"


class GitServer(object):

    def __init__(self, root, password, log):
        self.root = root
        self.repo_name = "magnum-clusters.git"
        self.repo = os.path.join(root, self.repo_name)
        self.password = password
        self.log = log
        run(["git", "init", "-q", "--bare", "-b", BRANCH, self.repo])
        run(["git", "--git-dir", self.repo, "config", "http.receivepack", "true"])
        run(["git", "--git-dir", self.repo, "config", "core.logAllRefUpdates", "always"])
        self.backend = os.path.join(run(["git", "--exec-path"]).strip(), "git-http-backend")
        if not os.access(self.backend, os.X_OK):
            raise RuntimeError("git-http-backend is missing at %s" % self.backend)
        self.pushes = []  # (time.time() when the push's answer was complete, branch head)
        # Called once, after a push has updated the branch and before its answer is sent:
        # a fault test kills the pusher there, so it never learns that its push landed.
        self.before_push_answer = None
        self.requests = 0
        self._lock = threading.Lock()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d/%s" % (self.port, self.repo_name)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="git-http",
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- reading the repository --------------------------------------------------------

    def git(self, *args):
        return run(["git", "--git-dir", self.repo] + list(args))

    def head(self):
        try:
            return self.git("rev-parse", "--verify", "-q", BRANCH).strip() or None
        except RuntimeError:
            return None

    # The shim's test Service reads its repository with the same two methods (git, head).
    commits = shim_service.Service.commits  # oldest first: {sha, subject, trailers{}}
    show = shim_service.Service.show

    def files(self, rev=BRANCH):
        if self.head() is None:
            return []
        return self.git("ls-tree", "-r", "--name-only", rev).split()

    def pushed_at(self, sha):
        """When the branch first held sha (after the push that brought it), or None."""
        with self._lock:
            pushes = list(self.pushes)
        for at, head in pushes:
            if head == sha or self.is_ancestor(sha, head):
                return at
        return None

    def is_ancestor(self, sha, head):
        return subprocess.run(["git", "--git-dir", self.repo, "merge-base", "--is-ancestor",
                               sha, head], capture_output=True).returncode == 0

    # -- HTTP ----------------------------------------------------------------------------

    def _handler(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, fmt, *args):
                with open(server.log, "a") as f:
                    f.write("%s %s\n" % (time.strftime("%H:%M:%S"), fmt % args))

            def _authorized(self):
                h = self.headers.get("Authorization", "")
                if not h.startswith("Basic "):
                    return False
                try:
                    user, _, pw = base64.b64decode(h[6:]).decode().partition(":")
                except ValueError:
                    return False
                return user == USER and hmac.compare_digest(pw, server.password)

            def _body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _serve(self):
                with server._lock:
                    server.requests += 1
                if not self._authorized():
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                body = self._body() if self.command == "POST" else b""
                env = {"GIT_PROJECT_ROOT": server.root, "GIT_HTTP_EXPORT_ALL": "1",
                       "PATH_INFO": path, "QUERY_STRING": query,
                       "REQUEST_METHOD": self.command, "REMOTE_USER": USER,
                       "REMOTE_ADDR": self.client_address[0],
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "CONTENT_LENGTH": str(len(body)), "PATH": os.environ["PATH"],
                       "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1"}
                for k, v in self.headers.items():
                    if k.lower() not in ("content-type", "content-length", "authorization"):
                        env["HTTP_" + k.upper().replace("-", "_")] = v
                p = subprocess.run([server.backend], input=body, env=env,
                                   capture_output=True)
                with open(server.log, "ab") as f:
                    f.write(p.stderr)
                head, sep, payload = p.stdout.partition(b"\r\n\r\n")
                if not sep:
                    head, _, payload = p.stdout.partition(b"\n\n")
                status, headers = 200, []
                for line in head.decode("latin-1").splitlines():
                    k, _, v = line.partition(":")
                    if k.lower() == "status":
                        status = int(v.split()[0])
                    elif k:
                        headers.append((k, v.strip()))
                if self.command == "POST" and path.endswith("/git-receive-pack"):
                    with server._lock:
                        hook, server.before_push_answer = server.before_push_answer, None
                    if hook is not None:
                        hook()
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()
                if self.command == "POST" and path.endswith("/git-receive-pack"):
                    at = time.time()
                    with server._lock:
                        server.pushes.append((at, server.head()))

            do_GET = _serve
            do_POST = _serve

        return Handler
