#!/usr/bin/env python3
"""R7: kill -9 while a cache evicts and its reclaimer deletes, then `verify --hash`.

The cache holds at most R7_MAX entries (low water 50%), so every `prefetch`
run (fresh URLs, inline and file blobs, thumbnails on) evicts: the horizon
moves in one short transaction, and a reclaimer deletes the evicted rows,
inline bytes and files afterwards, in chunks. Each run is SIGKILLed at a
point of its own progress (lib.ProgressKill: a seeded 10% mark from the
spawn to 80% done, plus a seeded fraction of one step's measured time, at
the latest at the next mark), so every run is killed while it stores,
evicts and reclaims, however fast or slow the machine. After every run
`verify --hash` must find no row without its bytes and exact totals
(evicted rows left by a killed reclaimer are invisible and counted out,
their files still there). The index itself (read-only SQLite) shows how
many evicted rows were waiting. At the end an unkilled run leaves the cache
under its limit, `verify --repair` leaves 0 problems, and the evictions
counter is the number of items gone.

Env: R7_KILLS (12), R7_URLS per run (40), R7_MAX (30), R7_BUDGET seconds (30: a bound on the kill
loop, not what decides the kills), R7_SEED (the kill points; default: the commit, as lib.seed_for).
"""
import os
import random
import signal
import sqlite3
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repo
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

KILLS = int(lib.env_float("R7_KILLS", 12))
PER_RUN = int(lib.env_float("R7_URLS", 40))
MAX_ENTRIES = int(lib.env_float("R7_MAX", 30))
BUDGET = lib.env_float("R7_BUDGET", 30)
MAX_RUNS = KILLS * 2          # a bound; every run is planned to be killed
KILL_STEPS = 9                # kill marks 0%..80%: the next mark (at most 90%) comes before the last items
ROW_PROBLEMS = ("missing_blobs", "size_mismatches", "hash_mismatches", "totals_mismatch")


def index_rows(cache):
    """(rows in the index, rows below the horizon): read-only, beside the CLI's own readers."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(cache, "index.sqlite"), uri=True, timeout=10)
    try:
        rows = db.execute("SELECT count(*) FROM entry").fetchone()[0]
        evicted = db.execute("SELECT count(*) FROM entry WHERE accessed_at < (SELECT horizon FROM totals)").fetchone()[0]
        return rows, evicted
    finally:
        db.close()


def body(rep, work, binary):
    seed, seed_from = lib.seed_for("R7_SEED")
    rng = random.Random(seed)
    env = {"ARTCACHE_CACHE_MAX_ENTRIES": str(MAX_ENTRIES), "ARTCACHE_CACHE_LOW_WATER": "0.5"}
    ac = lib.Artcache(binary, work, env)
    pool, logs = lib.workdirs(work)
    files = []
    for i in range(4):
        name = "large%d.jpg" % i
        lib.make_large(os.path.join(pool, name), width=400, quality=90)
        files.append(name)
    for i in range(4):
        name = "small%d.%s" % (i, "png" if i % 2 == 0 else "jpg")
        lib.make_small(os.path.join(pool, name), width=80 + 8 * i)
        files.append(name)
    origin, port = lib.start_origin_process(pool, log_dir=logs)
    cache = os.path.join(work, "cache")

    def url(n):
        return "http://127.0.0.1:%d/alias/r7u%d/%s" % (port, n, files[n % len(files)])

    next_id = 0
    kills = runs = waited_runs = 0
    lost = []
    pace = lib.Pace()
    t_end = time.monotonic() + BUDGET
    while kills < KILLS and runs < MAX_RUNS and time.monotonic() < t_end:
        runs += 1
        path = os.path.join(work, "run%02d.txt" % runs)
        with open(path, "w") as f:
            f.write("".join(url(n) + "\n" for n in range(next_id, next_id + PER_RUN)))
        next_id += PER_RUN
        step = rng.randrange(KILL_STEPS)
        frac = rng.random()
        # Without --json: its progress lines on stderr are the kill points.
        p = ac.spawn("prefetch", path, cache=cache, name="prefetch")
        plan = lib.ProgressKill(p, step, frac, pace.for_step(step))
        killed = False
        deadline = time.monotonic() + 60
        while p.alive() and time.monotonic() < deadline:   # bounded
            if plan.due():
                p.kill_group(signal.SIGKILL)
                killed = True
                break
            time.sleep(0.002)
        rc, timed_out = p.wait(timeout=30)
        pace.add(plan)
        problems, facts = [], []
        if timed_out:
            problems.append("prefetch hung")
        elif killed and rc == -signal.SIGKILL:
            kills += 1
            facts.append(plan.describe())
        elif rc != 0:
            out, err = p.output()
            problems.append("prefetch exit %s: %s" % (rc, err[-200:]))
        else:
            facts.append("finished before its kill (%s)" % plan.describe())
        vr, vj = ac.verify(cache, hash=True)
        if not isinstance(vj, dict) or vr.signal or vr.timed_out:
            problems.append("verify --hash: %s %s" % (vr.describe(), vr.err_line()))
        else:
            bad = {k: vj.get(k) for k in ROW_PROBLEMS if vj.get(k)}
            if bad:
                lost.append(bad)
                problems.append("rows without their bytes or wrong totals: %s (%s)" % (bad, lib.problem_kinds(vj)))
        if os.path.exists(os.path.join(cache, "index.sqlite")):
            rows, evicted = index_rows(cache)
            waited_runs += evicted > 0
            st = ac.stats(cache)
            if rows - evicted < st.get("entries", -1):
                problems.append("stats counts %s entries, the index has %d live rows" % (st.get("entries"), rows - evicted))
            facts.append("%d rows, %d evicted waiting, %s entries, %s evictions" % (
                rows, evicted, st.get("entries"), st.get("evictions")))
        rep.check("run %02d" % runs, problems, "; ".join(facts))

    rep.check("kill -9 count", [] if kills >= KILLS else ["only %d kills in %d runs within %.0fs" % (kills, runs, BUDGET)],
              "%d kill -9 in %d runs (max_entries %d), %d runs left evicted rows for the next process, seed %d (%s); "
              "a 10%% step took %s s here" % (kills, runs, MAX_ENTRIES, waited_runs, seed, seed_from,
                                              "%.3f" % pace.for_step(1) if pace.for_step(1) else "?"))
    rep.check("no row without its bytes after any kill", ["%d runs had problems" % len(lost)] if lost else [],
              "0 over %d runs" % runs)

    # An unkilled run evicts again and reclaims what the killed ones left.
    path = os.path.join(work, "final.txt")
    with open(path, "w") as f:
        f.write("".join(url(n) + "\n" for n in range(next_id, next_id + PER_RUN)))
    r = ac.run("prefetch", path, "--json", cache=cache, timeout=120)
    j = r.json() or {}
    st = ac.stats(cache)
    rr, rj = ac.verify(cache, hash=True, repair=True)
    vr, vj = ac.verify(cache, hash=True)
    problems = []
    if r.rc != 0 or j.get("failed") or j.get("render_failures"):
        problems.append("final prefetch %s: %s %s" % (r.describe(), j.get("failures"), r.err_line()))
    if st.get("entries", MAX_ENTRIES + 1) > MAX_ENTRIES or not st.get("evictions"):
        problems.append("entries %s (limit %d), evictions %s" % (st.get("entries"), MAX_ENTRIES, st.get("evictions")))
    if rr.signal or rr.timed_out or not isinstance(rj, dict):
        problems.append("verify --repair: %s %s" % (rr.describe(), rr.err_line()))
    if vr.rc != 0 or not isinstance(vj, dict) or vj.get("problems") or lib.verify_counts(vj):
        problems.append("verify --hash after repair: %s %s" % (vr.describe(), lib.verify_counts(vj or {})))
    rows, evicted = index_rows(cache)
    rep.check("under the limit, clean after repair", problems,
              "%s entries (limit %d), %s evictions, %d rows in the index (%d evicted waiting); "
              "verify --repair found %s; then verify --hash exit %s" % (
                  st.get("entries"), MAX_ENTRIES, st.get("evictions"), rows, evicted,
                  ", ".join("%s=%s" % kv for kv in lib.verify_counts(rj or {}).items()) or "nothing", vr.rc))
    origin.kill_group()


if __name__ == "__main__":
    lib.main("R7", body)
