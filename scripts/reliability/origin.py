#!/usr/bin/env python3
"""Loopback HTTP origins for the reliability suite (python3 stdlib only).

Binds 127.0.0.1 only, port 0 (the OS picks), threaded. Serves files from a
root directory read-only, plus a few extra routes:

  /alias/<anything>/<file>   the root's <file> (many URLs, one file: distinct cache keys)
  /_requests                 JSON {path: [monotonic request times...]} (the test's own view)
  /fault/...                 the faulty origin of R4 (see FaultyHandler.FAULTS)

Run as a program (`python3 origin.py --root DIR [--faulty] [--payload FILE]`) it prints
`listening 127.0.0.1 PORT` as its first stdout line and serves until killed.
"""
import http.server
import json
import os
import posixpath
import random
import socketserver
import sys
import threading
import time
import urllib.parse

HTML_ERROR = (b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head>"
              b"<body><h1>Service Unavailable</h1><p>Try again later.</p></body></html>\n")

# Longest any single handler keeps a connection open (trickle / endless / slow).
MAX_HANDLER_SECONDS = 90.0


class Origin(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False      # server_close() must not wait for trickle/endless handlers
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, root=None, handler=None, payload=None):
        self.root = os.path.realpath(root) if root else None
        self.payload = payload or b""   # the image a fault route finally answers 200 with
        self.lock = threading.Lock()
        self.requests = {}        # path -> [monotonic times]
        self.stopping = threading.Event()
        super().__init__(("127.0.0.1", 0), handler or StaticHandler)

    @property
    def port(self):
        return self.server_address[1]

    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def record(self, path):
        with self.lock:
            self.requests.setdefault(path, []).append(time.monotonic())
            return len(self.requests[path])

    def count(self, path):
        with self.lock:
            return len(self.requests.get(path, []))

    def times(self, path):
        with self.lock:
            return list(self.requests.get(path, []))

    def start(self):
        t = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        t.start()
        return self

    def stop(self):
        self.stopping.set()
        self.shutdown()
        self.server_close()


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "reliability-origin"
    sys_version = ""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=args[2].root or "/nonexistent", **kwargs)

    def log_message(self, *args):
        pass

    # Files say how long they keep (as artwork CDNs do) unless a route sets
    # its own Cache-Control: without it, RFC 9111's heuristic (10% of the
    # time since Last-Modified) makes files written by a case stale at once.
    def send_header(self, keyword, value):
        if keyword.lower() == "cache-control":
            self._cache_control_sent = True
        super().send_header(keyword, value)

    def end_headers(self):
        if not getattr(self, "_cache_control_sent", False):
            super().send_header("Cache-Control", "max-age=86400")
        self._cache_control_sent = False
        super().end_headers()

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            self.close_connection = True

    def translate_path(self, path):
        # /alias/<anything>/<file> -> <root>/<file>; everything stays under root.
        clean = urllib.parse.unquote(path.split("?", 1)[0].split("#", 1)[0])
        if clean.startswith("/alias/"):
            parts = clean.split("/", 3)
            clean = "/" + (parts[3] if len(parts) > 3 else "")
        full = super().translate_path(clean)
        root = self.server.root or "/nonexistent"
        if os.path.commonpath([os.path.realpath(full), root]) != root:
            return os.path.join(root, "__outside__")
        return full

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        self.server.record(path)
        if path == "/_requests":
            with self.server.lock:
                body = json.dumps({k: v for k, v in self.server.requests.items()}).encode()
            return self.send_body(200, body, "application/json")
        if not self.route():
            super().do_GET()

    def do_PUT(self):
        self.send_error(405)

    do_POST = do_DELETE = do_PUT

    def route(self):
        return False

    def send_body(self, status, body, ctype="image/jpeg", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


class FaultyHandler(StaticHandler):
    """R4's faulty origin: each route misbehaves in one way (path = /fault/<kind>/<id>)."""

    FAULTS = ("ok", "404", "500", "500then200", "429then200", "slow", "trickle", "cut", "loop",
              "endless", "html", "down")

    def route(self):
        path = self.path.split("?", 1)[0]
        parts = path.split("/")
        if len(parts) < 3 or parts[1] != "fault":
            return False
        kind = parts[2]
        n = self.server.count(path)       # this request included
        srv = self.server
        if kind == "ok":
            # No fault: R4 times a clean download with it (this machine's overhead).
            self.send_body(200, srv.payload)
        elif kind == "404":
            self.send_body(404, b"not found\n", "text/plain")
        elif kind == "500":
            self.send_body(500, b"internal error\n", "text/plain")
        elif kind == "500then200":
            if n == 1:
                self.send_body(500, b"internal error\n", "text/plain")
            else:
                self.send_body(200, srv.payload)
        elif kind == "429then200":
            if n == 1:
                self.send_body(429, b"slow down\n", "text/plain", [("Retry-After", "1")])
            else:
                self.send_body(200, srv.payload)
        elif kind == "slow":
            # Headers now, the body after a delay (below the client's timeouts).
            delay = float(parts[3]) if len(parts) > 3 else 2.0
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(srv.payload)))
            self.end_headers()
            self.wfile.flush()
            if srv.stopping.wait(delay):
                return True
            self.wfile.write(srv.payload)
            self.wfile.flush()
        elif kind == "trickle":
            # 1 byte per second "forever" (until the client leaves, bounded).
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(200_000))   # plausible, under max_body_size
            self.end_headers()
            self.close_connection = True
            deadline = time.monotonic() + MAX_HANDLER_SECONDS
            data = srv.payload * 1000
            i = 0
            while time.monotonic() < deadline and not srv.stopping.is_set():
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                i += 1
                if srv.stopping.wait(1.0):
                    break
        elif kind == "cut":
            # Content-Length larger than what is sent, then close.
            body = (srv.payload * 200)[:30_000]
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(100_000))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
        elif kind == "loop":
            other = "b" if (len(parts) > 4 and parts[4] == "a") else "a"
            ident = parts[3] if len(parts) > 3 else "x"
            self.send_response(302)
            self.send_header("Location", "%s/fault/loop/%s/%s" % (srv.base(), ident, other))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "endless":
            # Chunked random bytes forever (until the client leaves, bounded).
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.close_connection = True
            deadline = time.monotonic() + MAX_HANDLER_SECONDS
            chunk = srv.payload[:4] + random.randbytes(65532)
            first = True
            while time.monotonic() < deadline and not srv.stopping.is_set():
                data = chunk if first else random.randbytes(65536)
                first = False
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        elif kind == "html":
            self.send_body(200, HTML_ERROR, "image/jpeg")
        elif kind == "down":
            # An origin that goes down mid-run: its images expire at once
            # (max-age=0, ETag: 304 on If-None-Match) and, once more than
            # `srv.down_after` requests of this kind were answered, every
            # connection is closed without an answer (a network failure).
            with srv.lock:
                srv.down_seen = getattr(srv, "down_seen", 0) + 1
                seen = srv.down_seen
            after = getattr(srv, "down_after", None)
            if after is not None and seen > after:
                self.close_connection = True
                return True
            headers = [("ETag", '"p1"'), ("Cache-Control", "max-age=0")]
            if self.headers.get("If-None-Match") == '"p1"':
                self.send_body(304, b"", "image/jpeg", headers)
            else:
                self.send_body(200, srv.payload, "image/jpeg", headers)
        else:
            self.send_body(404, b"no such fault\n", "text/plain")
        return True


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", required=True)
    ap.add_argument("--faulty", action="store_true")
    ap.add_argument("--payload", help="image file the fault routes answer 200 with")
    args = ap.parse_args()
    payload = open(args.payload, "rb").read() if args.payload else b""
    origin = Origin(args.root, FaultyHandler if args.faulty else StaticHandler, payload)
    print("listening 127.0.0.1 %d" % origin.port, flush=True)
    try:
        origin.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
