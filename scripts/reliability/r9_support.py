"""Helpers of R9 (r9_background.py): a loopback origin that holds requests
open on demand, /metrics parsing, signed manifests, serve with a temp
cache.conf, verify with repair-on-failure (python3 stdlib only)."""
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import lib
from origin import Origin, StaticHandler

GRACE = 3.0                 # [service] shutdown_grace
HOLD_MAX = 120.0            # longest the origin holds a request (bounded)
METRIC = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eE]+|NaN|[+-]Inf)\s*$')
LABEL = re.compile(r'(\w+)="([^"]*)"')

def seed():
    if os.environ.get("R9_SEED"):
        return int(os.environ["R9_SEED"])
    try:
        out = subprocess.run(["git", "-C", lib.ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        return int(out[:8], 16)
    except (OSError, ValueError, subprocess.SubprocessError):
        return 34


class HoldHandler(StaticHandler):
    """/hold/<id>/<file>: never answered until the test releases it (then the
    connection is closed). /img/<id>/<file>: the root's <file> with an ETag
    and `Cache-Control: max-age=0` (/fresh/...: max-age=86400); a conditional
    GET (If-None-Match) is held while `srv.hold_revalidations` is set, else 304."""

    def route(self):
        parts = self.path.split("?", 1)[0].split("/")
        if len(parts) != 4 or parts[1] not in ("hold", "img", "fresh"):
            return False
        srv = self.server
        if parts[1] == "hold" or (self.headers.get("If-None-Match") and srv.hold_revalidations.is_set()):
            with srv.lock:
                srv.held += 1
            try:
                srv.release.wait(HOLD_MAX)
            finally:
                with srv.lock:
                    srv.held -= 1
            self.close_connection = True
            return True
        name = os.path.basename(parts[3])
        etag = '"%s"' % name
        cc = "max-age=0" if parts[1] == "img" else "max-age=86400"
        if self.headers.get("If-None-Match") == etag:
            self.send_body(304, b"", "image/jpeg", [("ETag", etag), ("Cache-Control", cc)])
            return True
        data = srv.files.get(name)
        if data is None:
            self.send_body(404, b"no such file\n", "text/plain")
        else:
            self.send_body(200, data, "image/jpeg", [("ETag", etag), ("Cache-Control", cc)])
        return True


def start_origin(pool, files):
    origin = Origin(pool, HoldHandler)
    origin.files = {f: open(os.path.join(pool, f), "rb").read() for f in files}
    origin.held = 0
    origin.release = threading.Event()
    origin.hold_revalidations = threading.Event()
    origin.request_queue_size = 1024
    origin.start()
    lib.at_exit(origin.stop)
    lib.at_exit(origin.release.set)
    lib.wait_http(origin.port, "/_requests", 10)
    return origin


def metrics(port):
    """{(name, frozenset(labels)): value} from /metrics, or None."""
    status, _, body, _, _ = lib.http_get(port, "/metrics", timeout=30)
    if status != 200:
        return None
    out = {}
    for line in body.decode("utf-8", "replace").splitlines():
        m = METRIC.match(line)
        if m:
            out[(m.group(1), frozenset(LABEL.findall(m.group(2) or "")))] = float(m.group(3))
    return out


def jobs(m, kind, state):
    return m.get(("artcache_background_jobs", frozenset({("kind", kind), ("state", state)})), 0.0)


def dropped(m, kind):
    return m.get(("artcache_background_dropped_total", frozenset({("kind", kind)})), 0.0)


def queued_bytes(m):
    return m.get(("artcache_background_queued_bytes", frozenset()), 0.0)


def wait_metrics(port, predicate, timeout, pace=0.05):
    """Scrapes /metrics until predicate(m) holds (bounded); returns (m, scrapes) or (None, scrapes)."""
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        m = metrics(port)
        n += 1
        if m is not None and predicate(m):
            return m, n
        time.sleep(pace)   # pacing of the scrapes, not a wait for an event
    return None, n


def write_conf(path, key, extra=""):
    with open(path, "w") as f:
        f.write('[service]\nkeys = ["%s"]\nshutdown_grace = "%gs"\nallow_unsigned = true\naccess_log = false\n'
                '\n[download]\nallowed_networks = ["127.0.0.0/8"]\nallowed_sources = ["127.0.0.1"]\n%s' % (key, GRACE, extra))
    return path


def serve(ac, cache, conf, key, logs, extra_env=None):
    env = {"ARTCACHE_CONFIG": conf, "ARTCACHE_SERVICE_KEYS": key}
    env.update(extra_env or {})
    return lib.start_serve(ac, cache, log_dir=logs, env=env)


def manifest_headers(key, body, query="", seconds=120):
    """The headers that sign POST /v1/manifest[?query] with body (docs/http-api.md, "Manifests and
    info"): HMAC-SHA256 over "POST\\n/v1/manifest\\nQUERY\\nEXPIRES\\n" + body, base64url
    without padding, and its expiry."""
    expires = int(time.time()) + seconds
    text = ("POST\n/v1/manifest\n%s\n%d\n" % (query, expires)).encode() + body
    sig = base64.urlsafe_b64encode(hmac.new(bytes.fromhex(key), text, hashlib.sha256).digest()).decode().rstrip("=")
    return {"X-ArtCache-Signature": sig, "X-ArtCache-Expires": str(expires), "Content-Type": "application/json"}


def post_manifest(port, key, urls, timeout=60):
    body = json.dumps(urls).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/v1/manifest", body=body, headers=manifest_headers(key, body))
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def verify_clean(ac, cache, hash=True):
    """[] when `verify [--hash] --json` reports no problem; else the problems (after a --repair)."""
    vr, vj = ac.verify(cache, hash=hash, timeout=300)
    if vr.rc == 0 and isinstance(vj, dict) and not vj.get("problems") and not lib.verify_counts(vj):
        return [], vj
    why = "verify%s %s %s %s" % (" --hash" if hash else "", vr.describe(), lib.verify_counts(vj or {}) or vr.err_line(),
                                 lib.problem_kinds(vj))
    rr, rj = ac.verify(cache, hash=hash, repair=True, timeout=300)
    return [why + "; verify --repair %s %s" % (rr.describe(), lib.verify_counts(rj or {}))], vj


def prefetch(ac, cache, urls, path, timeout):
    with open(path, "w") as f:
        f.write("".join(u + "\n" for u in urls))
    r = ac.run("prefetch", path, "--json", "--no-thumbnails", cache=cache, timeout=timeout)
    j = r.json() or {}
    if r.rc != 0 or (j.get("downloaded") or 0) + (j.get("cached") or 0) < len(urls):
        raise RuntimeError("prefetch of %d: %s %s %s" % (len(urls), r.describe(), j.get("failures"), r.err_line()))
    return r.secs


def original_path(url):
    return "/unsafe/original/%s" % lib.b64url(url)


def fire(port, paths, clients, check):
    """GETs every path with `clients` threads; returns (results, seconds); check(status, hdrs, secs) -> problem|None."""
    results = []
    lock = threading.Lock()

    def one(path):
        status, hdrs, data, secs, err = lib.http_get(port, path, timeout=60)
        p = check(status, hdrs, secs) if err is None else "%s: %s" % (path[:50], err)
        with lock:
            results.append((status, hdrs.get("x-artcache-source"), secs, p))

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=clients) as ex:
        list(ex.map(one, paths))
    return results, time.monotonic() - t0
