#!/usr/bin/env python3
"""Plot and summarise the mixed soak: mixed_report.py OUT.png MIXED.csv MIXED.json

Prints Markdown: serve's VmRSS and RssAnon (MiB) at 2 min, 5 min, the end, the maximum and
the least-squares slope over the last half of the run (MiB per 10 min); per background
kind the largest and last number queued, the largest running, the jobs ended and dropped;
queued bytes and pending store writes (max, end); requests, errors, revalidations, stale
answers; manifests, prefetch batches and purges (mixed.py's summary). The plot has two
panels: RSS over time (purges marked), and queued background jobs by kind over time.
"""
import csv, json, sys

out, csv_path, json_path = sys.argv[1:4]
rows = [r for r in csv.DictReader(open(csv_path)) if int(r["rss_kib"]) > 0]
summ = json.load(open(json_path))
KINDS = ["revalidation", "placeholder", "warm_up", "touch_log_fold", "reclaim", "negative_cleanup", "format_upgrade"]
num = lambda r, c: float(r[c]) if r.get(c) not in (None, "") else None
mib = lambda r, c: int(r[c]) / 1024
f = lambda v, d=0: "–" if v is None else f"{v:.{d}f}"

def at(t, c):
    best = min(rows, key=lambda r: abs(float(r["t_s"]) - t))
    return mib(best, c) if abs(float(best["t_s"]) - t) <= 10 else None

def slope(c):
    end = float(rows[-1]["t_s"])
    pts = [(float(r["t_s"]), mib(r, c)) for r in rows if float(r["t_s"]) >= end / 2]
    if len(pts) < 3: return None
    n = len(pts); mx = sum(x for x, _ in pts) / n; my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx * 600 if sxx else None

def col(c): return [v for v in (num(r, c) for r in rows) if v is not None]
def mx(c): v = col(c); return max(v) if v else None
def last(c): v = col(c); return v[-1] if v else None

end = rows[-1]
print(f"Run: {float(end['t_s']):.0f} s, {len(rows)} samples; binary {summ.get('binary', '?')} ({summ.get('version', '?')})")
print(f"Load at start: {summ.get('uptime_start', '?').strip()}")
print(f"Load at end:   {summ.get('uptime_end', '?').strip()}\n")
print("| serve memory (MiB) | 2 min | 5 min | end | max | last-half slope (MiB/10 min) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for c, name in (("rss_kib", "VmRSS"), ("rss_anon_kib", "RssAnon")):
    print(f"| {name} | {f(at(120, c))} | {f(at(300, c))} | {f(mib(end, c))} | {f(max(mib(r, c) for r in rows))} | {f(slope(c), 1)} |")
print("\n| background kind | queued max | queued end | running max | ended (end) | dropped (end) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for k in KINDS:
    print(f"| {k} | {f(mx(f'bg_{k}_queued'))} | {f(last(f'bg_{k}_queued'))} | {f(mx(f'bg_{k}_running'))} | {f(last(f'bg_{k}_done'))} | {f(last(f'bg_{k}_dropped'))} |")
qb = mx("bg_queued_bytes")
print(f"\nQueued bytes: max {f(qb / 2**20 if qb is not None else None, 1)} MiB, end {f((last('bg_queued_bytes') or 0) / 2**20, 1)} MiB; "
      f"store writes pending: max {f(mx('writes_pending'))}, end {f(last('writes_pending'))}; "
      f"/metrics scrape: worst {f(mx('metrics_ms'))} ms.")
print(f"\nRequests: {end['done']} done, {end['errors']} errors, worst p99 {f(max(float(r['p99_ms']) for r in rows))} ms, "
      f"max start lag {f(max(float(r['max_lag_ms']) for r in rows))} ms; revalidations {f(last('revalidations'))}, "
      f"stale answers {f(last('stale_answers'))}.")
print(f"Manifests posted: {summ['manifests']} {summ['manifest_codes']} (slowest {summ['manifest_ms_max']:.0f} ms); "
      f"prefetch batches: {summ['prefetch_batches']} ({summ['prefetch_failed']} exited non-zero, {summ['prefetch_urls']} URLs); "
      f"purges: {summ['purges']} ({summ['purge_failed']} failed; {summ['purged_originals']} originals, "
      f"{summ['purged_variants']} variants removed).")
if summ.get("stats"):
    print("Cache after each purge (MB, originals, variants): " +
          ", ".join(f"{s['t']} s: {f((s.get('bytes') or 0) / 1e6)}/{s.get('originals')}/{s.get('variants')}" for s in summ["stats"]))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"(matplotlib missing: no plot written to {out})", file=sys.stderr); sys.exit(0)
fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 7), dpi=80, sharex=True)
t = [float(r["t_s"]) / 60 for r in rows]
a1.plot(t, [mib(r, "rss_kib") for r in rows], label="VmRSS", linewidth=1.4)
a1.plot(t, [mib(r, "rss_anon_kib") for r in rows], label="RssAnon", linewidth=1.0, linestyle="--")
for i, e in enumerate(e for e in summ.get("events", []) if e["kind"] == "purge"):
    a1.axvline(e["t"] / 60, color="grey", alpha=0.4, linewidth=0.8, label="purge" if i == 0 else None)
a1.set_ylabel("MiB"); a1.set_ylim(bottom=0); a1.grid(alpha=0.3); a1.legend(loc="lower right", fontsize="small")
a1.set_title("artcache serve (arena2) under browser load + manifests + prefetch + purge")
for k in KINDS:
    ys = [num(r, f"bg_{k}_queued") for r in rows]
    if any(ys): a2.plot(t, [y or 0 for y in ys], label=k, linewidth=1.2)
run = [sum(num(r, f"bg_{k}_running") or 0 for k in KINDS) for r in rows]
a2.plot(t, run, label="running (all kinds)", color="black", linewidth=0.8, linestyle=":")
a2.set_xlabel("minutes"); a2.set_ylabel("background jobs queued"); a2.set_ylim(bottom=0)
a2.grid(alpha=0.3); a2.legend(loc="upper right", fontsize="small")
fig.tight_layout(); fig.savefig(out)
