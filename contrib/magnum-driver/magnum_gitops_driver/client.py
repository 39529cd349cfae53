"""HTTP client of the magnum-gitops service.

Before its first request to a service, a process asks ``GET /version`` and refuses a
service whose ``eventAPIVersions`` lack the one this driver sends, or that has no
``/version`` (older than this release). ``POST /v1/events`` sends one ClusterEvent; 5xx answers, 408/429, timeouts and refused
connections are retried with exponential backoff and jitter, with the same event id and the
same bytes, until ``[gitops] retries`` or ``[gitops] deadline`` runs out. Any other 4xx is
final: it raises a Magnum exception whose text is the service's message, verbatim, which
the conductor writes into ``status_reason``.

Nothing here logs or raises a request body: events carry secrets.
"""

import ipaddress
import json
import random
import time
from urllib import parse

from oslo_log import log as logging
import requests
from urllib3 import exceptions as urllib3_exc

from magnum.common import exception

from magnum_gitops_driver import __version__
from magnum_gitops_driver.event import API_VERSION

LOG = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset([408, 429])
# 5xx answers the service marks as needing an operator: retrying within the deadline cannot
# help (502 repository_refused: the Git server refuses magnum-gitops).
FINAL_5XX_CODES = frozenset(["repository_refused"])
# Text of a non-JSON answer kept in an error message, at most.
MAX_TEXT = 300


def _escape(message):
    # MagnumException applies "message % kwargs"; keep a literal "%" literal.
    return message.replace("%", "%%")


def service_error(status, message):
    """The Magnum exception for a final (non-retryable) answer of the service."""
    text = _escape(message)
    if status in (400, 413, 415, 422):
        exc = exception.InvalidParameterValue(message=text)
    elif status == 409:
        exc = exception.Conflict(message=text)
    else:
        exc = exception.MagnumException(message=text)
    # The service answered and did not keep the event.
    exc.gitops_refused = True
    return exc


class Unavailable(exception.MagnumException):
    """The service could not be reached, or kept failing, until the deadline."""

    message = "magnum-gitops unavailable: %(detail)s"


class IncompatibleService(exception.MagnumException):
    """The service does not speak the event API this driver sends: nothing was sent."""

    message = "%(detail)s"
    gitops_maybe_received = False


# The endpoints found to speak API_VERSION, with their release: asked once per process (the
# conductor builds a driver, so a client, for every call). A refusal is not kept, so a
# service upgraded meanwhile is accepted without restarting Magnum.
_COMPATIBLE = {}


def _is_loopback(host):
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _error_code(resp):
    try:
        err = resp.json().get("error")
    except (ValueError, AttributeError):
        return None
    return err.get("code") if isinstance(err, dict) else None


def _retryable(resp):
    if resp.status_code in RETRYABLE_STATUS:
        return True
    return resp.status_code >= 500 and _error_code(resp) not in FINAL_5XX_CODES


def _error_message(resp):
    """The service's error message, or a short description of a non-JSON answer."""
    try:
        doc = resp.json()
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        err = doc.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]:
            return err["message"]
        if isinstance(err, str) and err:
            return err
    text = (resp.text or "").strip().replace("\n", " ")
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + "..."
    reason = resp.reason or ""
    msg = "magnum-gitops answered HTTP %d %s" % (resp.status_code, reason)
    return msg.strip() + (": " + text if text else "")


class Client(object):
    """One client per driver instance; cheap to build (no I/O until the first request)."""

    def __init__(self, conf, sleep=time.sleep, clock=time.monotonic):
        self.conf = conf
        self._sleep = sleep
        self._clock = clock
        self._session = None
        if not conf.endpoint:
            raise exception.MagnumException(
                message="[gitops] endpoint is not set: the magnum-gitops driver cannot "
                "reach its service")
        url = parse.urlsplit(conf.endpoint)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise exception.MagnumException(
                message=_escape("[gitops] endpoint %r is not an http(s) URL" % conf.endpoint))
        if (url.scheme == "http" and not conf.allow_plain_http
                and not _is_loopback(url.hostname)):
            raise exception.MagnumException(
                message="[gitops] endpoint uses plain http on a non-loopback host; events "
                "carry secrets. Use https, or set [gitops] allow_plain_http.")
        self.base = conf.endpoint.rstrip("/")

    # -- plumbing -------------------------------------------------------------------

    @property
    def session(self):
        if self._session is None:
            s = requests.Session()
            s.headers["User-Agent"] = "magnum-gitops-driver/%s %s" % (
                __version__, requests.utils.default_user_agent())
            self._session = s
        return self._session

    @property
    def tls(self):
        """Per-request TLS arguments. Passed with each request, not set on the session:
        requests lets REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE override a session's verify."""
        cert = None
        if self.conf.cert_file:
            cert = ((self.conf.cert_file, self.conf.key_file) if self.conf.key_file
                    else self.conf.cert_file)
        return {"verify": self.conf.ca_file or True, "cert": cert}

    def _token(self):
        if not self.conf.token_file:
            return None
        problem = None
        try:
            with open(self.conf.token_file, encoding="utf-8") as f:
                token = f.read().strip()
            if not token:
                problem = "is empty"
        except OSError as e:
            # The path is configuration, not a secret; the content never appears.
            problem = "cannot be read: %s" % (e.strerror or e.__class__.__name__)
        if problem:
            exc = exception.MagnumException(
                message=_escape("[gitops] token_file %s %s" % (self.conf.token_file, problem)))
            exc.gitops_maybe_received = False
            raise exc
        return token

    def _headers(self, request_id=None, idempotency_key=None, body=False):
        h = {"Accept": "application/json"}
        token = self._token()
        if token:
            h["Authorization"] = "Bearer " + token
        if body:
            h["Content-Type"] = "application/json"
        if idempotency_key:
            h["Idempotency-Key"] = idempotency_key
        if request_id:
            h["X-OpenStack-Request-ID"] = request_id
        return h

    def _backoff(self, attempt):
        """Pause before retry number ``attempt`` (1-based): exponential, half jittered."""
        base = min(self.conf.backoff_max, self.conf.backoff_initial * (2 ** (attempt - 1)))
        return base / 2 + random.uniform(0, base / 2)

    # -- the service's version -------------------------------------------------------

    def check_service(self, timeout=None, request_id=None):
        """Ask the service's GET /version once per endpoint and process.

        Raises IncompatibleService, naming both releases, when its eventAPIVersions lack
        API_VERSION, and when it has no /version (a release older than this driver's).
        Any other outcome (unreachable, 5xx, another refusal) decides nothing: the request
        that follows reports it, retries it, and this is asked again next time.
        """
        if self.base in _COMPATIBLE:
            return
        url = self.base + "/version"
        try:
            resp = self.session.get(url, headers=self._headers(request_id),
                                    timeout=timeout or self.conf.timeout, **self.tls)
        except requests.exceptions.RequestException as e:
            LOG.debug("magnum-gitops: GET %(u)s: %(e)s", {"u": url, "e": _short(e)})
            return
        if resp.status_code == 404:
            raise IncompatibleService(detail=_escape(
                "magnum-gitops at %s has no GET /version: it is older than this driver "
                "(magnum-gitops-driver %s, event API %s), or a proxy in front of it does "
                "not forward /version. Install magnum-gitops %s, the driver's release."
                % (self.base, __version__, API_VERSION, __version__)))
        if resp.status_code != 200:
            LOG.debug("magnum-gitops: GET %(u)s: HTTP %(c)d", {"u": url, "c": resp.status_code})
            return
        try:
            doc = resp.json()
        except ValueError:
            doc = None
        apis = doc.get("eventAPIVersions") if isinstance(doc, dict) else None
        if not isinstance(apis, list):
            raise IncompatibleService(detail=_escape(
                "magnum-gitops at %s answered GET /version without eventAPIVersions: not a "
                "magnum-gitops service this driver (magnum-gitops-driver %s, event API %s) "
                "can talk to" % (self.base, __version__, API_VERSION)))
        release = doc.get("version") or "(unknown)"
        if API_VERSION not in apis:
            raise IncompatibleService(detail=_escape(
                "magnum-gitops %s at %s speaks event API %s; this driver (magnum-gitops-driver "
                "%s) sends %s. Install the driver and the service of one release."
                % (release, self.base, ", ".join(str(a) for a in apis) or "(none)",
                   __version__, API_VERSION)))
        params = {"v": release, "u": self.base, "api": API_VERSION, "d": __version__}
        if release != __version__:
            LOG.warning("magnum-gitops %(v)s at %(u)s speaks event API %(api)s, the one "
                        "magnum-gitops-driver %(d)s sends; install one release of both", params)
        else:
            LOG.info("magnum-gitops %(v)s at %(u)s speaks event API %(api)s", params)
        _COMPATIBLE[self.base] = release

    # -- API --------------------------------------------------------------------------

    def post_event(self, event, request_id=None):
        """Send one ClusterEvent; return the service's answer (a dict) once it is durable.

        Raises a Magnum exception when the service refuses the event (its message,
        verbatim) or stays unavailable until the deadline, IncompatibleService (before
        sending anything) when it does not speak the event API this driver sends.
        """
        body = json.dumps(event, separators=(",", ":"), sort_keys=True).encode("utf-8")
        event_id = event["id"]
        url = self.base + "/v1/events"
        start = self._clock()
        deadline = start + self.conf.deadline
        self.check_service(min(self.conf.timeout, self.conf.deadline), request_id)
        attempt = 0
        last = "no attempt made"
        # Whether the service may have received the event: False while every attempt
        # failed to connect.
        reached = False
        headers = self._headers(request_id, event_id, body=True)
        while True:
            attempt += 1
            remaining = deadline - self._clock()
            if remaining <= 0:
                break
            timeout = min(self.conf.timeout, remaining)
            try:
                resp = self.session.post(url, data=body, headers=headers, timeout=timeout,
                                         **self.tls)
            except requests.exceptions.SSLError as e:
                # A certificate problem does not heal by retrying: fail now.
                exc = exception.MagnumException(message=_escape(
                    "TLS with magnum-gitops at %s failed: %s" % (self.base, _short(e))))
                exc.gitops_maybe_received = False
                LOG.error("magnum-gitops event %(id)s (%(op)s): %(e)s",
                          {"id": event_id, "op": event.get("operation"), "e": exc})
                raise exc
            except requests.exceptions.ConnectTimeout:
                last = "cannot connect to %s within %.1fs" % (self.base, timeout)
                resp = None
            except requests.exceptions.Timeout:
                last = "no answer within %.1fs" % timeout
                reached = True
                resp = None
            except requests.exceptions.ConnectionError as e:
                if _never_sent(e):
                    last = "cannot connect to %s (%s)" % (self.base, _short(e))
                else:  # e.g. the connection dropped after the body went out
                    last = "connection to %s lost (%s)" % (self.base, _short(e))
                    reached = True
                resp = None
            except requests.exceptions.RequestException as e:
                last = "request failed (%s)" % _short(e)
                reached = True
                resp = None
            if resp is not None:
                reached = True
                if 200 <= resp.status_code < 300:
                    try:
                        answer = resp.json()
                    except ValueError:
                        answer = None
                    if not isinstance(answer, dict):
                        raise exception.MagnumException(
                            message="magnum-gitops answered HTTP %d without a JSON object"
                            % resp.status_code)
                    LOG.info("magnum-gitops accepted event %(id)s (%(op)s, cluster %(c)s): "
                             "stack_id %(s)s, revision %(r)s, attempt %(a)d",
                             {"id": event_id, "op": event.get("operation"),
                              "c": event.get("cluster", {}).get("uuid"),
                              "s": answer.get("stack_id"), "r": answer.get("revision"),
                              "a": attempt})
                    return answer
                message = _error_message(resp)
                if not _retryable(resp):
                    LOG.warning("magnum-gitops refused event %(id)s (%(op)s): HTTP %(code)d: "
                                "%(msg)s", {"id": event_id, "op": event.get("operation"),
                                            "code": resp.status_code, "msg": message})
                    raise service_error(resp.status_code, message)
                last = "HTTP %d: %s" % (resp.status_code, message)
            if attempt > self.conf.retries:
                break
            pause = self._backoff(attempt)
            if self._clock() + pause >= deadline:
                break
            LOG.warning("magnum-gitops event %(id)s (%(op)s), attempt %(a)d: %(last)s; "
                        "retrying in %(p).1fs", {"id": event_id, "op": event.get("operation"),
                                                 "a": attempt, "last": last, "p": pause})
            self._sleep(pause)
        elapsed = self._clock() - start
        LOG.error("magnum-gitops event %(id)s (%(op)s) failed after %(a)d attempt(s) in "
                  "%(e).1fs: %(last)s", {"id": event_id, "op": event.get("operation"),
                                         "a": attempt, "e": elapsed, "last": last})
        exc = Unavailable(detail="%s (%d attempt(s) in %.1fs)" % (last, attempt, elapsed))
        exc.gitops_maybe_received = reached
        raise exc

    def get_status(self, uuid, request_id=None):
        """The service's status document of a cluster, or None when it does not know it.

        One attempt: the periodic jobs call again in a few seconds. Raises Unavailable on
        transport errors and 5xx, IncompatibleService for a service that does not speak the
        driver's event API, a Magnum exception on other unexpected answers.
        """
        self.check_service(request_id=request_id)
        url = "%s/v1/clusters/%s/status" % (self.base, parse.quote(uuid, safe=""))
        try:
            resp = self.session.get(url, headers=self._headers(request_id),
                                    timeout=self.conf.timeout, **self.tls)
        except requests.exceptions.RequestException as e:
            raise Unavailable(detail="status of %s: %s" % (uuid, _short(e)))
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            message = _error_message(resp)
            if resp.status_code >= 500 or resp.status_code in RETRYABLE_STATUS:
                raise Unavailable(detail="status of %s: HTTP %d: %s"
                                         % (uuid, resp.status_code, message))
            raise service_error(resp.status_code, message)
        try:
            doc = resp.json()
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise Unavailable(detail="status of %s: not a JSON object" % uuid)
        return doc


def _never_sent(e):
    """Whether a requests ConnectionError happened before any byte reached the service."""
    reason = e.args[0] if e.args else None
    if isinstance(reason, urllib3_exc.MaxRetryError):
        reason = reason.reason
    return isinstance(reason, (urllib3_exc.NewConnectionError,
                               urllib3_exc.ConnectTimeoutError))


def _short(e):
    text = str(e)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."
