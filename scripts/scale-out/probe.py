#!/usr/bin/env python3
"""Helpers of scripts/scale-out/run-tier2 (loopback only, bounded).

  probe.py sign KEY_HEX OPTIONS < urls > paths     signed service paths (HMAC-SHA256, base64url),
                                                   as ServiceURLSigner makes them (no salt)
  probe.py get SOCKET PATHS OUT.tsv                GET every path through nginx's unix socket on one
                                                   keep-alive connection, past its front cache; writes
                                                   path, status, X-ArtCache-Source, X-Upstream, ms
  probe.py origin JPEG                             the origin: /img/NAME.jpg is JPEG with NAME in a
                                                   comment segment (distinct bytes per source);
                                                   /count says how many images it served
  probe.py stats TSV...                            p50/p99 ms by X-ArtCache-Source class
"""
import base64, hashlib, hmac, http.client, http.server, socket, sys, threading, time


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(key_hex, options):
    key = bytes.fromhex(key_hex)
    for line in sys.stdin:
        url = line.strip()
        if not url:
            continue
        rest = "/%s/%s" % (options, b64url(url.encode()))
        print("/" + b64url(hmac.new(key, rest.encode(), hashlib.sha256).digest()) + rest)


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.unix_path)


def get(socket_path, paths_file, out_file):
    conn = UnixConnection(socket_path)
    with open(paths_file) as paths, open(out_file, "w") as out:
        for path in (p.strip() for p in paths):
            if not path:
                continue
            start = time.perf_counter()
            for attempt in (1, 2):  # a keep-alive connection nginx closed meanwhile: once more
                try:
                    conn.request("GET", path, headers={"X-ArtCache-Bypass": "1", "Accept": "image/avif,image/webp,*/*"})
                    response = conn.getresponse()
                    response.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    conn = UnixConnection(socket_path)
                    if attempt == 2:
                        raise
            ms = (time.perf_counter() - start) * 1000
            upstream = (response.getheader("X-Upstream") or "-").split(", ")[-1]
            out.write("%s\t%d\t%s\t%s\t%.3f\n" % (path, response.status, response.getheader("X-ArtCache-Source") or "-",
                                                  upstream, ms))


def origin(jpeg):
    base = open(jpeg, "rb").read()
    served = [0]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path == "/count":
                body = str(served[0]).encode()
                kind = "text/plain"
            elif self.path.startswith("/img/") and self.path.endswith(".jpg"):
                name = self.path[5:].encode()
                with lock:
                    served[0] += 1
                body = base[:2] + b"\xff\xfe" + (len(name) + 2).to_bytes(2, "big") + name + base[2:]
                kind = "image/jpeg"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Cache-Control", "max-age=86400")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("origin on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def stats(files):
    classes = {}
    for name in files:
        for line in open(name):
            path, status, source, upstream, ms = line.rstrip("\n").split("\t")
            kind = {"memory": "local", "disk": "local"}.get(source, source)
            classes.setdefault(kind, []).append(float(ms))
    for kind, values in sorted(classes.items()):
        print("%s\t%d\t%.2f\t%.2f" % (kind, len(values), percentile(values, 50), percentile(values, 99)))


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "sign":
        sign(sys.argv[2], sys.argv[3])
    elif command == "get":
        get(sys.argv[2], sys.argv[3], sys.argv[4])
    elif command == "origin":
        origin(sys.argv[2])
    elif command == "stats":
        stats(sys.argv[2:])
    else:
        sys.exit(__doc__)
