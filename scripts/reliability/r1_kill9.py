#!/usr/bin/env python3
"""R1: kill -9 at random points during `prefetch`, two processes at once on one
cache (inline and file blobs, thumbnails on), then `verify --hash`.

Each run starts two `prefetch` processes on overlapping URL lists (new URLs
each run, plus some committed earlier) and SIGKILLs each at a point of its
own progress (lib.ProgressKill: a seeded 10% mark from the spawn, while the
index opens, to 70% done, plus a seeded fraction of one step's measured
time, at the latest at the next mark), so a planned kill always happens,
on a fast machine and on a slow one. One process in FINISH_SHARE is left
to finish (a seeded choice, not a race with the clock) and must have
printed its summary (`--json`). After
every run `verify --hash` must find no committed row lost, short or corrupt
(a dead writer's temp file or uncommitted blob is allowed until --repair) and
the row count never goes down. At the end: `verify --repair` leaves 0
problems, every committed original is still served from the cache without
the network, and sampled entries match the origin byte for byte.

Env: R1_KILLS (50), R1_URLS per process per run (40), R1_BUDGET seconds (150: a bound on the
kill loop, not what decides the kills), R1_SEED (random seed; printed; default: the commit, as
lib.seed_for, never the clock).
"""
import json
import os
import random
import signal
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repo
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

KILLS = int(lib.env_float("R1_KILLS", 50))
PER_RUN = int(lib.env_float("R1_URLS", 40))
BUDGET = lib.env_float("R1_BUDGET", 150)
MAX_RUNS = KILLS * 2          # bounded even when processes keep finishing before their kill
KILL_STEPS = 8                # kill marks 0%..70%: the next mark (at most 80%) comes before the last items
FINISH_SHARE = 0.1            # processes left to finish (their summary is checked)
PREFETCH_TIMEOUT = 90
ROW_PROBLEMS = ("missing_blobs", "size_mismatches", "hash_mismatches", "totals_mismatch")


def body(rep, work, binary):
    seed, seed_from = lib.seed_for("R1_SEED")
    rng = random.Random(seed)
    ac = lib.Artcache(binary, work)
    pool, logs = lib.workdirs(work)
    files = []
    for i in range(6):
        name = "large%d.jpg" % i
        lib.make_large(os.path.join(pool, name), width=400, quality=90)
        files.append(name)
    for i in range(6):
        name = "small%d.%s" % (i, "png" if i % 3 == 0 else "jpg")
        lib.make_small(os.path.join(pool, name), width=80 + 8 * i)
        files.append(name)
    digests = {f: lib.sha256_file(os.path.join(pool, f)) for f in files}
    origin, port = lib.start_origin_process(pool, log_dir=logs)
    cache = os.path.join(work, "cache")

    def url(n):
        return "http://127.0.0.1:%d/alias/u%d/%s" % (port, n, files[n % len(files)])

    used = []                 # every URL ever given to a prefetch
    next_id = 0
    kills = runs = 0
    killed_at_start = 0       # kills before the first progress line (start-up, index opening)
    finished = 0              # processes left to finish (planned)
    prev_rows = 0
    worst = []                # committed-row problems seen after any run
    pace = lib.Pace()         # how long progress steps take here: the kill points follow it
    t_end = time.monotonic() + BUDGET
    while kills < KILLS and runs < MAX_RUNS and time.monotonic() < t_end:
        runs += 1
        fresh = list(range(next_id, next_id + PER_RUN + PER_RUN // 2))
        next_id += len(fresh)
        old = rng.sample(used, min(len(used), PER_RUN // 4))
        lists = {"A": fresh[:PER_RUN] + old[: len(old) // 2],
                 "B": list(reversed(fresh[PER_RUN // 2:])) + old[len(old) // 2:]}
        procs, plan = {}, {}
        for name, ids in lists.items():
            path = os.path.join(work, "run%02d-%s.txt" % (runs, name))
            with open(path, "w") as f:
                f.write("# R1 run %d process %s\n" % (runs, name))
                f.write("".join(url(n) + "\n" for n in ids))
            used.extend(n for n in ids if n not in old)
            finish = rng.random() < FINISH_SHARE
            step, frac = rng.randrange(KILL_STEPS), rng.random()
            if finish:   # --json: its summary is checked; no progress lines needed
                procs[name] = ac.spawn("prefetch", path, "--json", cache=cache, name="prefetch-%s" % name)
                plan[name] = None
            else:        # without --json: its progress lines on stderr are the kill points
                procs[name] = ac.spawn("prefetch", path, cache=cache, name="prefetch-%s" % name)
                plan[name] = lib.ProgressKill(procs[name], step, frac, pace.for_step(step))
        t0 = time.monotonic()
        outcome = {}
        deadline = t0 + PREFETCH_TIMEOUT
        while len(outcome) < len(procs) and time.monotonic() < deadline:   # bounded
            for name, p in procs.items():
                if name in outcome:
                    continue
                if not p.alive():
                    outcome[name] = ("exit", time.monotonic() - p.t0)
                elif plan[name] and plan[name].due():
                    p.kill_group(signal.SIGKILL)
                    outcome[name] = ("kill", time.monotonic() - p.t0)
            time.sleep(0.002)
        problems, facts = [], []
        used = list(dict.fromkeys(used))
        for name, p in procs.items():
            rc, timed_out = p.wait(timeout=30)
            out, err = p.output()
            how, when = outcome.get(name, ("hang", PREFETCH_TIMEOUT))
            if plan[name]:
                pace.add(plan[name])
            if timed_out or how == "hang":
                problems.append("%s hung (no exit in %ds)" % (name, PREFETCH_TIMEOUT))
            elif rc == -signal.SIGKILL and plan[name]:
                kills += 1
                killed_at_start += not plan[name].marks
                facts.append("%s %s" % (name, plan[name].describe()))
            elif rc is not None and rc < 0:
                problems.append("%s died of signal %d: %s" % (name, -rc, err[-200:]))
            else:
                j = lib.prefetch_summary(out)   # --json when planned to finish, else the text summary
                finished += plan[name] is None
                if not isinstance(j, dict):
                    problems.append("%s exit %s without its summary (stdout %r, stderr %r)" % (name, rc, out[-100:],
                                                                                             err[-200:]))
                else:
                    summary = "requested=%s downloaded=%s cached=%s failed=%s variants=%s" % (
                        j.get("requested"), j.get("downloaded"), j.get("cached"), j.get("failed"), j.get("variants"))
                    facts.append("%s finished %.2fs exit %s%s: %s" % (
                        name, when, rc, "" if plan[name] is None else " before its kill (%s)" % plan[name].describe(),
                        summary))
                    if rc != 0 or j.get("failed") or j.get("refused") or j.get("render_failures"):
                        problems.append("%s exit %s, failures %s, render_failures %s" % (
                            name, rc, j.get("failures"), j.get("render_failures")))
            if "database is locked" in (out + err).lower():
                problems.append("%s: 'database is locked'" % name)
        vr, vj = ac.verify(cache, hash=True)
        if not isinstance(vj, dict) or vr.signal or vr.timed_out:
            problems.append("verify --hash: %s %s" % (vr.describe(), vr.err_line()))
        else:
            bad = {k: vj.get(k) for k in ROW_PROBLEMS if vj.get(k)}
            if bad:
                worst.append(bad)
                problems.append("committed entries lost/corrupt: %s (problems %s)" % (bad, lib.problem_kinds(vj)))
            if vj.get("rows", 0) < prev_rows:
                problems.append("rows went down %d -> %d (committed entries lost)" % (prev_rows, vj.get("rows")))
            prev_rows = max(prev_rows, vj.get("rows", 0))
            left = {k: vj.get(k) for k in ("orphan_blobs", "temp_files") if vj.get(k)}
            facts.append("verify --hash: %d rows, %d blobs hashed%s" % (
                vj.get("rows", 0), vj.get("blobs", 0), ", " + ", ".join("%s=%s" % kv for kv in left.items())
                if left else ", clean"))
        rep.check("run %02d" % runs, problems, "; ".join(facts))

    rep.check("kill -9 count", [] if kills >= KILLS else ["only %d kills in %d runs within %.0fs" % (kills, runs, BUDGET)],
              "%d kill -9 in %d runs (%d before the first progress line), %d left to finish, two prefetch processes "
              "per run, seed %d (%s)" % (kills, runs, killed_at_start, finished, seed, seed_from))
    rep.check("committed entries after all kills", ["%d runs had lost/corrupt rows" % len(worst)] if worst else [],
              "0 lost or corrupt over %d runs, %d rows" % (runs, prev_rows))

    # verify --repair, then a clean verify --hash.
    st_before = ac.stats(cache)
    rr, rj = ac.verify(cache, hash=True, repair=True)
    vr, vj = ac.verify(cache, hash=True)
    problems = []
    if rr.signal or rr.timed_out or not isinstance(rj, dict):
        problems.append("verify --repair: %s %s" % (rr.describe(), rr.err_line()))
    if vr.rc != 0 or not isinstance(vj, dict) or vj.get("problems") or lib.verify_counts(vj):
        problems.append("verify --hash after repair: %s %s %s" % (vr.describe(), lib.verify_counts(vj or {}),
                                                                (vj or {}).get("problems", [])[:3]))
    st = ac.stats(cache)
    if st.get("entries") != st_before.get("entries"):
        problems.append("repair dropped rows: entries %s -> %s" % (st_before.get("entries"), st.get("entries")))
    found = ", ".join("%s=%s" % kv for kv in lib.verify_counts(rj or {}).items()) or "nothing"
    rep.check("verify --repair", problems, "found %s, repaired %s; then verify --hash exit %s, 0 problems, %s entries"
              % (found, (rj or {}).get("repaired"), vr.rc, st.get("entries")))

    # Nothing committed is lost: every committed original comes from the cache, without the network.
    originals = st.get("originals", 0)
    listing = os.path.join(work, "all.txt")
    with open(listing, "w") as f:
        f.write("".join(url(n) + "\n" for n in used))
    before = lib.http_get(port, "/_requests")[2]
    r = ac.run("prefetch", listing, "--json", cache=cache, timeout=300)
    j = r.json() or {}
    after = lib.http_get(port, "/_requests")[2]
    fetched = sum(len(v) for k, v in json.loads(after).items() if k.startswith("/alias/")) - \
        sum(len(v) for k, v in json.loads(before).items() if k.startswith("/alias/"))
    problems = []
    if r.rc != 0 or j.get("failed") or j.get("render_failures"):
        problems.append("final prefetch %s failures %s render_failures %s %s" % (
            r.describe(), j.get("failures"), j.get("render_failures"), r.err_line()))
    if j.get("cached") != originals:
        problems.append("cached=%s but %s originals were committed" % (j.get("cached"), originals))
    if j.get("downloaded") != len(used) - originals or fetched != j.get("downloaded"):
        problems.append("downloaded=%s, origin requests=%d, expected %d" % (j.get("downloaded"), fetched,
                                                                            len(used) - originals))
    rep.check("committed originals served from cache", problems,
              "%d URLs: cached=%s (all %d committed), downloaded=%s, %.1fs" % (
                  len(used), j.get("cached"), originals, j.get("downloaded"), r.secs))

    # Sampled entries are byte-identical to the origin's files; verify --hash clean at the end.
    problems = []
    sample = rng.sample(used, min(40, len(used)))
    for n in sample:
        out = os.path.join(work, "get.bin")
        g = ac.run("get", url(n), "-o", out, cache=cache, timeout=30)
        if g.rc != 0:
            problems.append("get %s: %s %s" % (url(n), g.describe(), g.err_line()))
        elif lib.sha256_file(out) != digests[files[n % len(files)]]:
            problems.append("get %s: bytes differ from the origin" % url(n))
    vr, vj = ac.verify(cache, hash=True)
    if vr.rc != 0 or not isinstance(vj, dict) or vj.get("problems"):
        problems.append("final verify --hash %s %s" % (vr.describe(), lib.verify_counts(vj or {})))
    st = ac.stats(cache)
    rep.check("content", problems[:5], "%d sampled originals byte-identical; final verify --hash exit %s: %s rows "
              "(%s inline bytes, %s file bytes)" % (len(sample), vr.rc, (vj or {}).get("rows"),
                                                    st.get("inline_bytes"), st.get("file_bytes")))
    origin.kill_group()


if __name__ == "__main__":
    lib.main("R1", body)
