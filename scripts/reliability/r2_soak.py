#!/usr/bin/env python3
"""R2: one cache, for R2_DURATION seconds (default 60): two `prefetch` loops,
`serve` under load (4 client threads), `purge` (rotating filters), `stats`
and `verify` loops, all at once. Must show: 0 errors surfaced to any process
(every CLI run exits 0 with a valid JSON summary and no failures, every HTTP
request answers 200), 0 SQLITE_BUSY ("database is locked" in any output of
any process, serve's log included), and `verify --hash` clean at the end.
The soak runs for a fixed time, but nothing it asserts counts what got done
in it (a slow machine does less, a fast one more; both must show 0 errors).

Env: R2_DURATION (60), R2_CLIENTS (4), R2_SEED (the requests' random choices; default: the
commit, as lib.seed_for, never the clock; the threads' interleaving still varies).
"""
import os
import random
import re
import sys
import threading
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repo
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

DURATION = lib.env_float("R2_DURATION", 60)
CLIENTS = int(lib.env_float("R2_CLIENTS", 4))
HOT = 160                          # URLs shared by serve and the prefetch loops
BUSY = re.compile(r"database is locked|database table is locked|sqlite_busy|sqlite_locked|sqlite error [56]:", re.I)
SIZES = ["64x64", "100x100", "150x150", "100x100,fit=cover", "200x120,f=png"]
PURGES = [["--older-than", "3s"], ["--variants-only"], ["--to-size", "4MB"], ["--host", "127.0.0.1", "--older-than",
                                                                             "10s"], ["--url", None]]


class Loop:
    """Runs step() back to back (paced) until stop; counts runs and errors; scans outputs for SQLITE_BUSY."""

    def __init__(self, name, step, stop, pace=0.0):
        self.name, self.step, self.stop, self.pace = name, step, stop, pace
        self.runs = 0
        self.errors = []
        self.busy = []
        self.facts = {}
        self.lines = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def scan(self, text, what):
        self.lines += text.count("\n") + 1
        m = BUSY.search(text)
        if m:
            line = next((l for l in text.splitlines() if BUSY.search(l)), m.group(0))
            self.busy.append("%s: %s" % (what, line.strip()[:160]))

    def error(self, msg):
        self.errors.append(msg)

    def _loop(self):
        while not self.stop.is_set() and not lib._shutting_down.is_set():
            try:
                self.step(self)
            except Exception as e:  # the harness must not die silently
                self.error("harness: %s: %s" % (type(e).__name__, e))
            self.runs += 1
            if self.pace:
                self.stop.wait(self.pace)

    def add(self, key, n):
        self.facts[key] = self.facts.get(key, 0) + (n or 0)


def body(rep, work, binary):
    seed, seed_from = lib.seed_for("R2_SEED")   # the requests, purges and URL picks; never the clock
    rng = random.Random(seed)
    ac = lib.Artcache(binary, work)
    pool, logs = lib.workdirs(work)
    files = []
    for i in range(6):
        files.append("large%d.jpg" % i)
        lib.make_large(os.path.join(pool, files[-1]), width=400, quality=90)
        files.append("small%d.%s" % (i, "png" if i % 2 else "jpg"))
        lib.make_small(os.path.join(pool, files[-1]), width=90 + 6 * i)
    origin, port = lib.start_origin_process(pool, log_dir=logs)
    cache = os.path.join(work, "cache")
    serve, sport = lib.start_serve(ac, cache, log_dir=logs)

    def url(n):
        return "http://127.0.0.1:%d/alias/u%d/%s" % (port, n, files[n % len(files)])

    stop = threading.Event()
    counter_lock = threading.Lock()
    fresh = {"A": 100_000, "B": 200_000}

    # --- two prefetch loops: new URLs each run plus a share of the hot set.
    def prefetch_step(loop):
        with counter_lock:
            start = fresh[loop.name[-1]]
            fresh[loop.name[-1]] += 12
        ids = list(range(start, start + 12)) + rng.sample(range(HOT), 18)
        rng.shuffle(ids)
        path = os.path.join(work, "%s-%d.txt" % (loop.name.replace(" ", "-"), loop.runs))
        with open(path, "w") as f:
            f.write("".join(url(n) + "\n" for n in ids))
        r = ac.run("prefetch", path, "--json", cache=cache, timeout=120)
        loop.scan(r.out + r.err, "prefetch")
        j = r.json()
        if r.rc != 0 or not isinstance(j, dict) or j.get("failed") or j.get("refused") or j.get("render_failures"):
            loop.error("%s: failures %s render_failures %s %s" % (r.describe(), (j or {}).get("failures"),
                                                                  (j or {}).get("render_failures"), r.err_line()))
        else:
            for k in ("downloaded", "cached", "variants"):
                loop.add(k, j.get(k))
        os.unlink(path)

    # --- serve under load.
    lat = []
    statuses = {}
    lat_lock = threading.Lock()

    def client_step(loop):
        n = rng.randrange(HOT)
        opts = rng.choice(SIZES)
        path = "/unsafe/%s/%s" % (opts, lib.b64url(url(n)))
        if rng.random() < 0.02:
            path = rng.choice(["/health", "/metrics"])
        status, hdrs, data, secs, err = lib.http_get(sport, path, timeout=60)
        with lat_lock:
            lat.append(secs)
            statuses[status] = statuses.get(status, 0) + 1
        loop.scan(data[:300].decode("latin-1") if status != 200 else "", "serve body")
        if status != 200 or not data:
            loop.error("GET %s -> %s %s %s" % (path[:40], status, hdrs.get("x-artcache-error", ""), err or ""))

    def purge_step(loop):
        args = list(rng.choice(PURGES))
        if args[-1] is None:
            args[-1] = url(rng.randrange(HOT))
        r = ac.run("purge", *args, "--json", cache=cache, timeout=120)
        loop.scan(r.out + r.err, "purge")
        j = r.json()
        if r.rc != 0 or not isinstance(j, dict) or "removed" not in j:
            loop.error("purge %s: %s %s" % (" ".join(args[:2]), r.describe(), r.err_line()))
        else:
            loop.add("removed", j.get("removed"))

    def stats_step(loop):
        r = ac.run("stats", "--json", cache=cache, timeout=60)
        loop.scan(r.out + r.err, "stats")
        j = r.json()
        if r.rc != 0 or not isinstance(j, dict) or not {"entries", "bytes", "hits"} <= set(j):
            loop.error("stats: %s %s" % (r.describe(), r.err_line()))
        else:
            loop.facts["last entries"] = j.get("entries")

    def verify_step(loop):
        hashing = loop.runs % 2 == 1
        r = ac.run("verify", "--json", *(["--hash"] if hashing else []), cache=cache, timeout=120)
        loop.scan(r.out + r.err, "verify")
        j = r.json()
        if r.rc != 0 or not isinstance(j, dict):
            loop.error("verify%s: %s %s %s" % (" --hash" if hashing else "", r.describe(),
                                                lib.verify_counts(j or {}), lib.problem_kinds(j) or r.err_line()))

    loops = [Loop("prefetch A", prefetch_step, stop), Loop("prefetch B", prefetch_step, stop)]
    clients = [Loop("client %d" % i, client_step, stop) for i in range(CLIENTS)]
    others = [Loop("purge", purge_step, stop, pace=1.5), Loop("stats", stats_step, stop, pace=0.5),
              Loop("verify", verify_step, stop, pace=2.0)]
    t0 = time.monotonic()
    for lp in loops + clients + others:
        lp.thread.start()
    stop.wait(DURATION)            # the soak itself: a fixed duration
    stop.set()
    for lp in loops + clients + others:
        lp.thread.join(timeout=150)   # each step has its own timeout; this bounds the wait
        if lp.thread.is_alive():
            lp.error("still running 150s after the stop")
    soak = time.monotonic() - t0

    def report(name, lps, detail):
        errs = [e for lp in lps for e in lp.errors]
        rep.check(name, ["%d errors, e.g. %s" % (len(errs), " | ".join(errs[:3]))] if errs else [], detail)

    for lp in loops:
        report(lp.name, [lp], "%d runs, downloaded=%s cached=%s variants=%s, 0 errors" % (
            lp.runs, lp.facts.get("downloaded"), lp.facts.get("cached"), lp.facts.get("variants")))
    with lat_lock:
        s = sorted(lat) or [0]
        n = len(lat)
    report("serve under load", clients, "%d requests from %d clients in %.0fs, statuses %s, p50 %.0f ms, p99 %.0f ms, "
           "max %.0f ms, seed %d (%s)" % (n, CLIENTS, soak, statuses, 1000 * s[len(s) // 2],
                                          1000 * s[int(len(s) * 0.99)], 1000 * s[-1], seed, seed_from))
    purge, stats, verify = others
    report("purge", [purge], "%d runs, %s items removed" % (purge.runs, purge.facts.get("removed", 0)))
    report("stats", [stats], "%d runs, last entries=%s" % (stats.runs, stats.facts.get("last entries")))
    report("verify (concurrent)", [verify], "%d runs, every one exit 0" % verify.runs if not verify.errors else
           "%d runs" % verify.runs)

    # serve stops cleanly; its log has no SQLITE_BUSY either.
    t1 = time.monotonic()
    serve.send(15)
    rc, timed_out = serve.wait(timeout=60)
    out, err = serve.output()
    serve_scan = Loop("serve log", None, stop)
    serve_scan.scan(out + "\n" + err, "serve log")
    # swift-log lines: "<timestamp> <level> <label>: ..."
    log_errors = [l for l in err.splitlines() if len(l.split(" ", 2)) > 2 and l.split(" ", 2)[1] in
                  ("error", "critical")]
    problems = []
    if timed_out or rc != 0:
        problems.append("SIGTERM -> %s" % ("no exit in 60s" if timed_out else "exit %s" % rc))
    if log_errors:
        problems.append("%d error lines in serve's log, e.g. %s" % (len(log_errors), log_errors[0][:160]))
    rep.check("serve shutdown", problems, "SIGTERM -> exit %s in %.1fs" % (rc, time.monotonic() - t1))

    every = loops + clients + others + [serve_scan]
    busy = [b for lp in every for b in lp.busy]
    lines = sum(lp.lines for lp in every)
    rep.check("no SQLITE_BUSY", ["%d outputs say so, e.g. %s" % (len(busy), " | ".join(busy[:2]))] if busy else [],
              "'database is locked' nowhere in %d lines of output from %d CLI runs, the clients and serve's log" % (
                  lines, sum(lp.runs for lp in loops + others)))

    vr, vj = ac.verify(cache, hash=True)
    problems = []
    if vr.rc != 0 or not isinstance(vj, dict) or vj.get("problems"):
        problems.append("%s %s %s" % (vr.describe(), lib.verify_counts(vj or {}), (vj or {}).get("problems", [])[:3]))
    rep.check("final verify --hash", problems, "exit %s: %s rows, %s blobs hashed, 0 problems" % (
        vr.rc, (vj or {}).get("rows"), (vj or {}).get("blobs")))
    origin.kill_group()


if __name__ == "__main__":
    lib.main("R2", body)
