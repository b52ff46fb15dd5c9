#!/usr/bin/env python3
"""Plot and summarise soak CSVs: report.py OUT.png NAME=CSV [NAME=CSV ...]

Prints a Markdown table per variant: VmRSS (MiB) at 5 min, 15 min, at the end and its
maximum, the least-squares slope of VmRSS over the last half of the run (MiB per 10 min;
"levels off" = near 0), RssAnon (heap and other anonymous memory; VmRSS minus the
mapped binary, libraries and index file) at the end and its slope, requests done, errors, p99 latency (ms, worst
interval) and the largest start lag (ms).
"""
import csv, sys

def load(path):
    rows = [r for r in csv.DictReader(open(path)) if int(r["rss_kib"]) > 0]
    return rows

def at(rows, t):
    best = min(rows, key=lambda r: abs(float(r["t_s"]) - t))
    return int(best["rss_kib"]) / 1024 if abs(float(best["t_s"]) - t) <= 10 else None

def slope(rows, col="rss_kib"):
    end = float(rows[-1]["t_s"])
    pts = [(float(r["t_s"]), int(r[col]) / 1024) for r in rows if float(r["t_s"]) >= end / 2]
    if len(pts) < 3: return None
    n = len(pts); mx = sum(x for x, _ in pts) / n; my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx * 600 if sxx else None

out = sys.argv[1]
series = [(s.split("=", 1)[0], load(s.split("=", 1)[1])) for s in sys.argv[2:]]
f = lambda v, d=0: "–" if v is None else f"{v:.{d}f}"
print("| variant | RSS 5 min | RSS 15 min | RSS end | RSS max | last-half slope (MiB/10 min) | RssAnon end | RssAnon slope | requests | errors | worst p99 ms | max lag ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for name, rows in series:
    if not rows: print(f"| {name} | no samples |"); continue
    last = rows[-1]
    print(f"| {name} | {f(at(rows, 300))} | {f(at(rows, 900))} | {f(int(last['rss_kib']) / 1024)} | "
          f"{f(max(int(r['rss_kib']) for r in rows) / 1024)} | {f(slope(rows), 1)} | {f(int(last['rss_anon_kib']) / 1024)} | {f(slope(rows, 'rss_anon_kib'), 1)} | "
          f"{last['done']} | {last['errors']} | {f(max(float(r['p99_ms']) for r in rows))} | "
          f"{f(max(float(r['max_lag_ms']) for r in rows))} |")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"(matplotlib missing: no plot written to {out})", file=sys.stderr); sys.exit(0)
fig, ax = plt.subplots(figsize=(8, 4.5), dpi=80)
for name, rows in series:
    t = [float(r["t_s"]) / 60 for r in rows]
    line, = ax.plot(t, [int(r["rss_kib"]) / 1024 for r in rows], label=f"{name} VmRSS", linewidth=1.4)
    ax.plot(t, [int(r["rss_anon_kib"]) / 1024 for r in rows], label=f"{name} RssAnon", linewidth=1.0,
            linestyle="--", color=line.get_color())
ax.set_xlabel("minutes"); ax.set_ylabel("MiB"); ax.set_ylim(bottom=0)
ax.set_title("artcache serve RSS under a fixed mixed hit/miss load")
ax.grid(alpha=0.3); ax.legend(loc="lower right", fontsize="small", ncol=2)
fig.tight_layout(); fig.savefig(out)
