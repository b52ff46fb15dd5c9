#!/usr/bin/env python3
"""Fixed-rate mixed hit/miss load against one `artcache serve`, with RSS sampling.

Usage: load.py --port P --pid PID --origin http://127.0.0.1:N --key HEX --csv OUT
               [--rate R] [--hit F] [--conc C] [--duration S] [--interval S] [--seed N]
               [--accept TEXT] [--stale-every N] [--metrics]

Requests are scheduled at exactly `rate` per second (request i at t0 + i/rate) and
handed to `conc` keep-alive connections; a request that cannot start on time starts
late (its lag is recorded), none is skipped, so a serve that falls behind shows up as
lag, not as a lower rate. The request sequence depends only on --seed, so every variant
of one run gets the same requests. Every `interval` seconds one CSV row: elapsed
seconds, VmRSS/RssAnon/RssFile (KiB) and threads of PID, its CPU seconds, requests
done, errors (status != 200 or transport), hits/misses sent, p50/p99 latency (ms) and
the largest start lag (ms) of the interval. Only 127.0.0.1 is ever contacted.

Browser mode (the mixed soak, issue 34): --accept sends that Accept header with every
request and adds f=auto to the formats drawn (so the answer is negotiated from it);
--stale-every N puts every N-th hot source under /art/s.../ (the origin's short-lived
location: max-age=1), so hot requests for it find the original expired and revalidate;
--metrics adds to every row the serve's /metrics gauges of background work
(artcache_background_jobs{kind,state}, artcache_background_dropped_total{kind}, jobs
ended by kind (artcache_background_seconds_count{kind}),
artcache_background_queued_bytes, artcache_store_writes_pending) and its revalidation
and stale-answer counters.
"""
import argparse, base64, hashlib, hmac, http.client, os, queue, random, sys, threading, time

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--pid", type=int, required=True)
p.add_argument("--origin", required=True)
p.add_argument("--key", required=True)
p.add_argument("--csv", required=True)
p.add_argument("--rate", type=float, default=30)
p.add_argument("--hit", type=float, default=0.8)
p.add_argument("--conc", type=int, default=4)
p.add_argument("--duration", type=float, default=1800)
p.add_argument("--interval", type=float, default=5)
p.add_argument("--seed", type=int, default=23)
p.add_argument("--sources", type=int, default=36)
p.add_argument("--hot", type=int, default=256)
p.add_argument("--accept")
p.add_argument("--stale-every", type=int, default=0)
p.add_argument("--metrics", action="store_true")
p.add_argument("--drain", type=float, help="wait at most this long (s) after the schedule for requests still queued "
               "(default: up to 120 s per connection); those left are counted as not done")
a = p.parse_args()
assert a.origin.startswith("http://127.0.0.1:"), "loopback origins only"

KEY = bytes.fromhex(a.key)
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def signed(src, opts):
    rest = f"/{opts}/{b64(src.encode())}"
    return "/" + b64(hmac.new(KEY, rest.encode(), hashlib.sha256).digest()) + rest

SIZES = ["100x100", "160x160", "300x300", "512x512"]
FITS = ["cover", "contain"]
FORMATS = ["jpeg", "webp"] + (["auto"] if a.accept else [])
HEADERS = {"Accept": a.accept} if a.accept else {}
def spec(r): return f"{r.choice(SIZES)},fit={r.choice(FITS)},f={r.choice(FORMATS)}"

# Hot set: `hot` thumbnails of hot//4 source URLs (4 specs each), fixed by the seed.
hr = random.Random(a.seed * 7919)
HOT = []
for j in range(a.hot):
    g = j // 4
    src = f"{a.origin}/art/{'s' if a.stale_every and g % a.stale_every == 0 else 'h'}{g}/{g % a.sources}.jpg"
    HOT.append(signed(src, spec(hr)))

def request_path(i, r):
    """The i-th request: a hot-set thumbnail, or a thumbnail of a URL never asked before."""
    if r.random() < a.hit:
        return HOT[r.randrange(len(HOT))], True
    return signed(f"{a.origin}/art/m{i}/{r.randrange(a.sources)}.jpg", spec(r)), False

lock = threading.Lock()
st = dict(done=0, errors=0, hits=0, misses=0, lat=[], lag=0.0)
codes = {}
work = queue.Queue()
t0 = time.monotonic() + 0.5
stop_at = t0 + a.duration

def worker():
    conn = None
    while True:
        item = work.get()
        if item is None: return
        path, sched = item
        start = time.monotonic()
        code = 0
        for attempt in range(2):   # one retry only for a keep-alive connection closed under us
            try:
                if conn is None: conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=60)
                conn.request("GET", path, headers=HEADERS)
                resp = conn.getresponse(); resp.read(); code = resp.status
                break
            except (http.client.HTTPException, OSError) as e:
                code = type(e).__name__
                try: conn.close()
                except Exception: pass
                conn = None
        end = time.monotonic()
        with lock:
            st["done"] += 1
            if code != 200: st["errors"] += 1; codes[code] = codes.get(code, 0) + 1
            st["lat"].append((end - start) * 1000)
            st["lag"] = max(st["lag"], (start - sched) * 1000)

def proc_sample(pid):
    kv = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":"); kv[k] = v.split()[0] if v.split() else ""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return int(kv["VmRSS"]), int(kv.get("RssAnon", 0)), int(kv.get("RssFile", 0)), int(kv["Threads"]), cpu

KINDS = ["revalidation", "placeholder", "warm_up", "touch_log_fold", "reclaim", "negative_cleanup", "format_upgrade"]
MCOLS = [f"bg_{k}_{s}" for k in KINDS for s in ("queued", "running", "dropped", "done")] + \
        ["bg_queued_bytes", "writes_pending", "revalidations", "stale_answers", "metrics_ms"]
def metrics_sample():
    """The background gauges from /metrics (own connection, 10 s timeout; blanks when it fails)."""
    import re
    started = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=10)
        c.request("GET", "/metrics"); text = c.getresponse().read().decode(); c.close()
    except (http.client.HTTPException, OSError):
        return [""] * len(MCOLS)
    v = dict.fromkeys(MCOLS, 0.0)
    for line in text.splitlines():
        m = re.match(r'^(\w+)(?:\{([^}]*)\})? ([-0-9.e+]+)$', line)
        if not m: continue
        name, labels, val = m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")), float(m.group(3))
        if name == "artcache_background_jobs": v[f"bg_{labels.get('kind')}_{labels.get('state')}"] = val
        elif name == "artcache_background_dropped_total": v[f"bg_{labels.get('kind')}_dropped"] = val
        elif name == "artcache_background_seconds_count": v[f"bg_{labels.get('kind')}_done"] = val
        elif name == "artcache_background_queued_bytes": v["bg_queued_bytes"] = val
        elif name == "artcache_store_writes_pending": v["writes_pending"] = val
        elif name == "artcache_revalidations_total": v["revalidations"] += val
        elif name == "artcache_stale_answers_total": v["stale_answers"] += val
    v["metrics_ms"] = (time.monotonic() - started) * 1000
    return [f"{v[c]:.0f}" if c in v else "" for c in MCOLS]

out = open(a.csv, "w", buffering=1)
out.write("t_s,rss_kib,rss_anon_kib,rss_file_kib,threads,cpu_s,done,errors,hits,misses,p50_ms,p99_ms,max_lag_ms"
          + "".join("," + c for c in MCOLS if a.metrics) + "\n")
def sample():
    with lock:
        lat = sorted(st["lat"]); st["lat"] = []; lag = st["lag"]; st["lag"] = 0.0
        done, errors, hits, misses = st["done"], st["errors"], st["hits"], st["misses"]
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0.0
    try: rss, anon, filek, thr, cpu = proc_sample(a.pid)
    except OSError: rss = anon = filek = thr = 0; cpu = 0.0
    extra = "".join("," + x for x in metrics_sample()) if a.metrics else ""
    out.write(f"{time.monotonic() - t0:.1f},{rss},{anon},{filek},{thr},{cpu:.2f},{done},{errors},{hits},{misses},"
              f"{pct(0.5):.1f},{pct(0.99):.1f},{lag:.0f}{extra}\n")

def sampler():
    n = 0
    while True:
        n += 1
        delay = t0 + n * a.interval - time.monotonic()
        if delay > 0: time.sleep(delay)
        sample()
        if time.monotonic() >= stop_at: return

threads = [threading.Thread(target=worker, daemon=True) for _ in range(a.conc)]
for t in threads: t.start()
while time.monotonic() < t0: time.sleep(0.01)
sample_thread = threading.Thread(target=sampler, daemon=True); sample_thread.start()
r = random.Random(a.seed)
i = 0
while True:
    sched = t0 + i / a.rate
    if sched >= stop_at: break
    delay = sched - time.monotonic()
    if delay > 0: time.sleep(delay)
    path, hit = request_path(i, r)
    with lock: st["hits" if hit else "misses"] += 1
    work.put((path, sched)); i += 1
for _ in threads: work.put(None)
drain_end = time.monotonic() + a.drain if a.drain is not None else None
for t in threads: t.join(timeout=120 if drain_end is None else max(0, drain_end - time.monotonic()))
sample_thread.join(timeout=2 * a.interval)
with lock: tail = bool(st["lat"])
if tail: sample()   # requests that ended after the sampler's last row
out.close()
print(f"port {a.port}: sent {i}, done {st['done']}, errors {st['errors']} {codes or ''}", file=sys.stderr)
