#!/usr/bin/env python3
"""R6: the cache on a small tmpfs (8 MB), filled past full by prefetching
more than 8 MB of large images. Must show: typed `storage_full` errors
(`prefetch --json` failures, and in `get --json`'s error), no crash, the
index intact (`verify` exit 0, or only problems `verify --repair` fixes),
and a working cache again after `purge --all` (a later `get` succeeds).
Needs root (mount -t tmpfs); prints a skip line otherwise. Always unmounts.
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repo
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

TMPFS_SIZE = "8m"
N_URLS = 30                  # x ~470 KB originals (+ thumbnails) = well over 8 MB


def mount_tmpfs(path):
    r = lib.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % TMPFS_SIZE, "tmpfs", path], timeout=30)
    return r.rc == 0, r.err_line()


def umount(path):
    for args in (["umount", path], ["umount", "-l", path]):   # lazy as a last resort: never leave it mounted
        if lib.run(args, timeout=30).rc == 0:
            return True
        time.sleep(0.5)
    return False


def df(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def body(rep, work, binary):
    if os.geteuid() != 0:
        rep.skip("tmpfs", "not root: cannot mount a tmpfs")
        return
    mnt = os.path.join(work, "tmpfs")
    os.makedirs(mnt)
    ok, why = mount_tmpfs(mnt)
    if not ok:
        rep.skip("tmpfs", "mount -t tmpfs failed: %s" % why)
        return
    try:
        run_full(rep, work, binary, mnt)
    finally:
        lib.kill_all_children()          # nothing may keep the mount busy
        if not umount(mnt):
            rep.fail("umount", "could not unmount %s" % mnt)


def fill(path):
    """Writes `path` until its file system is full; returns the bytes written."""
    written, chunk = 0, b"\0" * 4096
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                written += f.write(chunk)
            except OSError:
                return written


def run_full(rep, work, binary, mnt):
    cache = os.path.join(mnt, "cache")
    ac = lib.Artcache(binary, work)
    pool, logs = lib.workdirs(work)
    names = []
    for i in range(3):
        name = "big%d.jpg" % i
        lib.make_noise_jpeg(os.path.join(pool, name), 800, 800, 95)
        names.append(name)
    sizes = {n: os.path.getsize(os.path.join(pool, n)) for n in names}
    origin, port = lib.start_origin_process(pool, log_dir=logs)

    def url(n):
        return "http://127.0.0.1:%d/alias/f%d/%s" % (port, n, names[n % len(names)])

    total = sum(sizes[names[n % len(names)]] for n in range(N_URLS))
    listing = os.path.join(work, "urls.txt")
    with open(listing, "w") as f:
        f.write("".join(url(n) + "\n" for n in range(N_URLS)))

    # 1. prefetch past full.
    r = ac.run("prefetch", listing, "--json", cache=cache, timeout=90)
    j = r.json() or {}
    failures = {k: v for k, v in (j.get("failures") or {}).items() if v}
    problems = []
    if r.timed_out or r.signal:
        problems.append("prefetch %s" % r.describe())
    elif not j:
        problems.append("no prefetch --json summary: %s %s" % (r.describe(), r.err_line(400).replace(cache, "CACHE")[:170]))
    if not failures.get("storage_full"):
        problems.append("no storage_full in failures %s (reason not implemented yet?)" % (failures or "{}"))
    elif set(failures) - {"storage_full"}:
        problems.append("other reasons besides storage_full: %s" % failures)
    if "database is locked" in r.err.lower():
        problems.append("'database is locked' in stderr")
    rep.check("prefetch past full", problems, "%.1f MB of originals into a %s tmpfs: %s, downloaded=%s failed=%s "
              "failures=%s render_failures=%s, %.1fs, %d KB free left" % (
                  total / 1e6, TMPFS_SIZE, r.describe(), j.get("downloaded"), j.get("failed"), failures,
                  j.get("render_failures"), r.secs, df(mnt) // 1024))

    # 2. get of one more large image while full: a typed error, not a crash.
    # Full for sure: how much the prefetch left free depends on how its
    # parallel writes failed (0 KB in most runs, 3.8 MB in one), so what is
    # left is filled first, and freed again after the get.
    # The cache's 1 MB reserve (kept back for the index, freed by an open
    # that finds the disk full) goes too: when the prefetch left room, it
    # was still there, and the get's open freed it and then stored its
    # 520 KB in it (seen once in CI: "2740 KB filled first; exit 0").
    reserve = os.path.join(cache, "reserve")
    if os.path.exists(reserve):
        os.remove(reserve)
    filler = os.path.join(mnt, "filler")
    filled = fill(filler)
    g = ac.run("get", url(N_URLS + 1), "--json", cache=cache, timeout=60)
    os.remove(filler)
    problems = []
    text = g.out + g.err
    if g.timed_out or g.signal:
        problems.append("get %s" % g.describe())
    elif g.rc == 0:
        problems.append("get succeeded on a full disk? (%s)" % g.out[:80])
    elif g.rc != 1:
        problems.append("get exit %d" % g.rc)
    if g.rc != 0 and "storage_full" not in text:
        problems.append("error has no storage_full reason: %r" % (g.err_line(400).replace(cache, "CACHE")[:170] or g.out[:120]))
    rep.check("get while full", problems, "%d KB filled first; %s: %s" % (
        filled // 1024, g.describe(), g.err_line(400).replace(cache, "CACHE")[:170] or g.out[:100]))

    # 3. stats still answers; the index is intact (or repairable).
    problems, facts = [], []
    try:
        st = ac.stats(cache)
        facts.append("stats: %s entries, %s bytes" % (st.get("entries"), st.get("bytes")))
    except RuntimeError as e:
        problems.append(str(e).replace(cache, "CACHE")[:200])
    vr, vj = ac.verify(cache, hash=True)
    if vr.timed_out or vr.signal or not isinstance(vj, dict):
        problems.append("verify --hash %s %s" % (vr.describe(), vr.err_line(400).replace(cache, "CACHE")[:170]))
    elif vr.rc == 0:
        facts.append("verify --hash exit 0")
    else:
        facts.append("verify --hash exit %d: %s" % (vr.rc, lib.verify_counts(vj)))
        rr, rj = ac.verify(cache, hash=True, repair=True)
        v2, vj2 = ac.verify(cache, hash=True)
        if v2.rc != 0:
            problems.append("verify --repair did not fix it: %s, then verify exit %s %s (%s)" % (
                rr.describe(), v2.rc, lib.verify_counts(vj2 or {}), v2.err_line(400).replace(cache, "CACHE")[:170]))
        else:
            facts.append("verify --repair fixed %s, then exit 0" % (rj or {}).get("repaired"))
    rep.check("index intact", problems, ", ".join(facts))

    # 4. purge --all, then the cache works again.
    problems, facts = [], []
    p = ac.run("purge", "--all", "--json", cache=cache, timeout=60)
    pj = p.json() or {}
    if p.rc != 0:
        problems.append("purge --all %s %s" % (p.describe(), p.err_line(400).replace(cache, "CACHE")[:170]))
    facts.append("purge --all %s removed=%s bytes=%s, %d KB free" % (p.describe(), pj.get("removed"), pj.get("bytes"),
                                                                   df(mnt) // 1024))
    out = os.path.join(work, "after.jpg")
    n = N_URLS + 2
    g = ac.run("get", url(n), "-o", out, cache=cache, timeout=60)
    if g.rc != 0:
        problems.append("get after purge: %s %s" % (g.describe(), g.err_line(400).replace(cache, "CACHE")[:170]))
    elif lib.sha256_file(out) != lib.sha256_file(os.path.join(pool, names[n % len(names)])):
        problems.append("get after purge: bytes differ")
    else:
        facts.append("get after purge exit 0, %d bytes intact" % os.path.getsize(out))
    t = ac.run("thumb", url(n), "--size", "100x100", "--json", cache=cache, timeout=60)
    if t.rc != 0:
        problems.append("thumb after purge: %s %s" % (t.describe(), t.err_line(400).replace(cache, "CACHE")[:170]))
    vr, vj = ac.verify(cache, hash=True)
    if vr.rc != 0:
        problems.append("verify --hash after purge: %s %s %s" % (vr.describe(), lib.verify_counts(vj or {}),
                                                                vr.err_line(400).replace(cache, "CACHE")[:170]))
    else:
        facts.append("verify --hash exit 0 (%s rows)" % (vj or {}).get("rows"))
    rep.check("works again after purge --all", problems, ", ".join(facts))
    origin.kill_group()
    # Nothing of ours may hold the mount when body() unmounts it.
    subprocess.run(["sync"], timeout=30)


if __name__ == "__main__":
    lib.main("R6", body)
