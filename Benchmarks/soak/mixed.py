#!/usr/bin/env python3
"""The rest of the mixed soak's traffic on one cache (issue 34), beside load.py's browser load.

Usage: mixed.py --port P --origin http://127.0.0.1:N --key HEX --conf CACHE.CONF --artcache BIN
                --duration S --out SUMMARY.json [--manifest-every S] [--manifest-items N]
                [--prefetch-batch N] [--prefetch-pause S] [--purge-every S] [--purge-older-than D]

Three bounded loops until the deadline, each in its own thread:
- manifests: every --manifest-every s a signed `POST /v1/manifest?sizes=100x100,300x300`
  whose body is a JSON array of --manifest-items URLs: half never seen, half the previous
  post's new ones (so their warm-ups are already queued or done and must be deduplicated);
  X-ArtCache-Signature = base64url(HMAC-SHA256(key, "POST\\n/v1/manifest\\nQUERY\\nEXPIRES\\n" + body))
  with X-ArtCache-Expires (no salt is configured);
- prefetch: `artcache prefetch` of a file of --prefetch-batch new URLs, one batch after
  another with --prefetch-pause s between (a separate process on the same cache);
- purge: every --purge-every s `artcache purge --older-than D --json` (what nobody asked
  for since: most one-off misses, prefetched and warmed-up originals), `purge --url U` of
  5 URLs of the last prefetch batch (cached) and 5 of the latest manifest (their warm-ups
  are queued, running or just done), then `stats --json`.
Counts and every event (seconds since start) go to --out. Only 127.0.0.1 is contacted.
"""
import argparse, base64, hashlib, hmac, http.client, json, os, subprocess, sys, tempfile, threading, time

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--origin", required=True)
p.add_argument("--key", required=True)
p.add_argument("--conf", required=True)
p.add_argument("--artcache", required=True)
p.add_argument("--duration", type=float, required=True)
p.add_argument("--out", required=True)
p.add_argument("--sources", type=int, default=36)
p.add_argument("--manifest-every", type=float, default=5)
p.add_argument("--manifest-items", type=int, default=200)
p.add_argument("--prefetch-batch", type=int, default=40)
p.add_argument("--prefetch-pause", type=float, default=5)
p.add_argument("--purge-every", type=float, default=60)
p.add_argument("--purge-older-than", default="2m")
a = p.parse_args()
assert a.origin.startswith("http://127.0.0.1:"), "loopback origins only"

KEY = bytes.fromhex(a.key)
latest = {"prefetch": [], "manifest": []}   # 5 URLs of each, for purge --url
t0 = time.monotonic()
stop_at = t0 + a.duration
lock = threading.Lock()
summary = dict(manifests=0, manifest_codes={}, manifest_ms_max=0.0, prefetch_batches=0, prefetch_failed=0,
               prefetch_urls=0, purges=0, purge_failed=0, purged_originals=0, purged_variants=0, stats=[], events=[])
def event(kind, **kw):
    with lock: summary["events"].append(dict(t=round(time.monotonic() - t0, 1), kind=kind, **kw))
def now(): return time.monotonic() - t0
def b64(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def sleep_until(t):
    d = t - time.monotonic()
    if d > 0: time.sleep(d)
def run(args, timeout):
    """A CLI command on the soak's cache; (exit code, stdout, seconds); kills it past timeout."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "ARTCACHE_CONFIG"}
    try:
        r = subprocess.run([a.artcache, *args, "--config", a.conf], capture_output=True, text=True,
                           timeout=timeout, env=env)
        return r.returncode, r.stdout, time.monotonic() - started, r.stderr[-300:]
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - started, ""

def manifests():
    n, prev = 0, []
    while time.monotonic() < stop_at and n < 100_000:
        new = [f"{a.origin}/art/n{n}x{j}/{(n * 7 + j) % a.sources}.jpg" for j in range(a.manifest_items // 2)]
        body = json.dumps(new + prev).encode()
        prev = new
        with lock: latest["manifest"] = new[:5]
        query = "sizes=100x100,300x300"
        expires = int(time.time()) + 120
        signed = ("POST\n/v1/manifest\n%s\n%d\n" % (query, expires)).encode() + body
        sig = b64(hmac.new(KEY, signed, hashlib.sha256).digest())
        started = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=60)
            c.request("POST", "/v1/manifest?" + query, body=body,
                      headers={"X-ArtCache-Signature": sig, "X-ArtCache-Expires": str(expires),
                               "Content-Type": "application/json"})
            resp = c.getresponse(); resp.read(); code = resp.status; c.close()
        except (http.client.HTTPException, OSError) as e:
            code = type(e).__name__
        ms = (time.monotonic() - started) * 1000
        with lock:
            summary["manifests"] += 1
            summary["manifest_codes"][str(code)] = summary["manifest_codes"].get(str(code), 0) + 1
            summary["manifest_ms_max"] = max(summary["manifest_ms_max"], ms)
        event("manifest", code=code, ms=round(ms))
        n += 1
        sleep_until(t0 + n * a.manifest_every)

def prefetches():
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        while time.monotonic() < stop_at and n < 10_000:
            path = os.path.join(tmp, "batch.txt")
            with open(path, "w") as f:
                for j in range(a.prefetch_batch):
                    f.write(f"{a.origin}/art/p{n}x{j}/{(n * 5 + j) % a.sources}.jpg\n")
            rc, out, secs, err = run(["prefetch", path, "--json"], timeout=max(30, stop_at - time.monotonic() + 60))
            with lock: latest["prefetch"] = [f"{a.origin}/art/p{n}x{j}/{(n * 5 + j) % a.sources}.jpg" for j in range(5)]
            with lock:
                summary["prefetch_batches"] += 1; summary["prefetch_urls"] += a.prefetch_batch
                if rc != 0: summary["prefetch_failed"] += 1
            event("prefetch", rc=rc, s=round(secs, 1), **({} if rc == 0 else {"stderr": err}))
            n += 1
            time.sleep(a.prefetch_pause)

def purges():
    n = 0
    while n < 1000:
        n += 1
        sleep_until(t0 + n * a.purge_every)
        if time.monotonic() >= stop_at: return
        rc, out, secs, err = run(["purge", "--older-than", a.purge_older_than, "--json"], timeout=120)
        try: j = json.loads(out)
        except ValueError: j = {}
        with lock: urls = latest["prefetch"] + latest["manifest"]
        by_url = [0, 0]
        for u in urls:
            rcu, outu, _, erru = run(["purge", "--url", u, "--json"], timeout=60)
            try: ju = json.loads(outu); by_url[0] += ju.get("originals", 0); by_url[1] += ju.get("variants", 0)
            except ValueError: pass
            if rcu != 0: rc = rc or rcu; err = err or erru
        rc2, out2, secs2, _ = run(["stats", "--json"], timeout=60)
        try: s = json.loads(out2); st = dict(t=round(now()), bytes=s.get("bytes"), originals=s.get("originals"), variants=s.get("variants"))
        except ValueError: st = dict(t=round(now()), error=rc2)
        with lock:
            summary["purges"] += 1
            if rc != 0: summary["purge_failed"] += 1
            summary["purged_originals"] += j.get("originals", 0) + by_url[0]
            summary["purged_variants"] += j.get("variants", 0) + by_url[1]
            summary["stats"].append(st)
        event("purge", rc=rc, s=round(secs, 1), originals=j.get("originals"), variants=j.get("variants"),
              by_url=dict(urls=len(urls), originals=by_url[0], variants=by_url[1]),
              **({} if rc == 0 else {"stderr": err}))

threads = [threading.Thread(target=f, daemon=True) for f in (manifests, prefetches, purges)]
for t in threads: t.start()
for t in threads: t.join(timeout=a.duration + 240)
with open(a.out, "w") as f: json.dump(summary, f, indent=1)
print(f"manifests {summary['manifests']} {summary['manifest_codes']}, prefetch batches {summary['prefetch_batches']} "
      f"({summary['prefetch_failed']} failed), purges {summary['purges']} ({summary['purge_failed']} failed; "
      f"{summary['purged_originals']} originals, {summary['purged_variants']} variants removed)", file=sys.stderr)
