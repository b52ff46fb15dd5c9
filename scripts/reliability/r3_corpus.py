#!/usr/bin/env python3
"""R3: the real-world corpus (../shared/corpus, served read-only by a loopback
python http.server) through `get`, `thumb` and `serve`.

Per file: no crash (signal exit), no hang (timeout); `get` and `thumb` end with
a result (exit 0, JSON) or a typed error (exit 1, one `artcache: error:` line);
`serve` answers an image or a typed error (status + X-ArtCache-Error). Files of
category `not_image` are refused and `corrupt` ones are errors (docs/thumbnails.md: never a
grey thumbnail). Bombs whose header declares more than max_source_pixels
(width x height of a frame) are refused fast as too_large by `thumb` and
`serve`; a frame flood (more frames than max_frames, or more pixels in all its
frames than max_animation_pixels) is answered with its first frame, fast
(issue 52: never an error, never the frames in memory); the other bombs must still end fast ("fast": BOMB_MAX_S plus
twice this machine's time for the `thumb` of an ordinary small image,
measured first, so a slow machine is not failed for being slow). A final `prefetch --json` of
every corpus URL checks the typed reasons. Skips cleanly when the corpus is absent.
"""
import csv
import os
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repo
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

MAX_SOURCE_PIXELS = 50_000_000   # [thumbnails] max_source_pixels default (one frame)
MAX_FRAMES = 100                 # [thumbnails] max_frames default
MAX_ANIMATION_PIXELS = 50_000_000  # [thumbnails] max_animation_pixels default
OP_TIMEOUT = 30                  # a hang
BOMB_MAX_S = 5.0                 # "refused from the header": fast, process start-up included (a loaded 2-core CI box: ~2 s seen)
OVERHEAD_FACTOR = 2              # the bomb bound gets this many times an ordinary `thumb`'s time on this machine
REASONS = {"dns", "connect", "timeout", "tls", "network", "connection", "truncated", "too_large",
           "too_many_redirects", "refused_scheme", "blocked_address", "blocked_source", "invalid_url",
           "not_an_image", "unsupported", "decode"}
RENDER_REASONS = {"render_unsupported", "render_too_large", "render_decode", "render_encode"}
MAGIC = {"image/jpeg": [b"\xff\xd8\xff"], "image/png": [b"\x89PNG"], "image/webp": [b"RIFF"],
         "image/avif": [b"\x00\x00\x00"], "image/gif": [b"GIF8"]}


def manifest_rows():
    with open(os.path.join(lib.CORPUS, "MANIFEST.tsv"), newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row.get("path", "").startswith("images/"):
                yield row


def declared(row):
    def num(k):
        try:
            return int(row.get(k) or 0)
        except ValueError:
            return 0
    return num("width"), num("height"), max(num("pages"), 1)


def declared_over_limits(row):
    """A frame declared larger than max_source_pixels: refused as too_large."""
    w, h, _ = declared(row)
    return w * h > MAX_SOURCE_PIXELS


def frame_flood(row):
    """An animation past max_frames or max_animation_pixels: its first frame."""
    w, h, pages = declared(row)
    return pages > 1 and (pages > MAX_FRAMES or w * h * pages > MAX_ANIMATION_PIXELS) and not declared_over_limits(row)


def one_error_line(res):
    lines = [l for l in res.err.splitlines() if l.strip()]
    return len(lines) == 1 and lines[0].startswith("artcache: error: ")


def body(rep, work, binary):
    if not os.path.isfile(os.path.join(lib.CORPUS, "MANIFEST.tsv")):
        rep.skip("corpus", "no corpus at %s" % lib.CORPUS)
        return
    rows = list(manifest_rows())
    ac = lib.Artcache(binary, work)
    logs = os.path.join(work, "logs")
    os.makedirs(logs)
    origin, port = lib.start_origin_process(lib.CORPUS, log_dir=logs)     # read-only: GET only
    cli_cache = os.path.join(work, "cache-cli")
    serve_cache = os.path.join(work, "cache-serve")
    serve, sport = lib.start_serve(ac, serve_cache, log_dir=logs)
    # This machine's overhead: `thumb` of the smallest ordinary JPEGs (process
    # start, a new cache, a download, a small render), median of 3.
    ordinary = sorted((r for r in rows if r["category"] == "jpeg" and os.path.exists(os.path.join(lib.CORPUS, r["path"]))),
                      key=lambda r: os.path.getsize(os.path.join(lib.CORPUS, r["path"])))[:3]
    samples = []
    for k, row in enumerate(ordinary):
        t = ac.run("thumb", "http://127.0.0.1:%d/%s" % (port, row["path"]), "--size", "100x100", "--json",
                   cache=os.path.join(work, "cache-base-%d" % k), timeout=OP_TIMEOUT)
        if t.rc == 0:
            samples.append(t.secs)
    overhead = lib.median(samples) or 0.0
    bomb_bound = BOMB_MAX_S + OVERHEAD_FACTOR * overhead
    rep.check("overhead", [] if samples else ["no ordinary JPEG made a thumbnail"],
              "an ordinary thumb takes %.2fs here (median of %s): bombs must end within %.1fs" % (
                  overhead, ", ".join("%.2f" % t for t in samples), bomb_bound))
    urls = []
    for row in rows:
        rel = row["path"]
        cat = row["category"]
        url = "http://127.0.0.1:%d/%s" % (port, rel)
        urls.append(url)
        path = os.path.join(lib.CORPUS, rel)
        size = os.path.getsize(path) if os.path.exists(path) else None
        problems, facts = [], []
        if size is None:
            rep.fail(rel, "listed in MANIFEST.tsv but missing")
            continue
        bomb_strict = cat == "bombs" and declared_over_limits(row)
        flood = cat == "bombs" and frame_flood(row)

        # get: the original, or a typed error.
        g = ac.run("get", url, "--json", cache=cli_cache, timeout=OP_TIMEOUT)
        gj = g.json()
        if g.timed_out or g.signal:
            problems.append("get %s" % g.describe())
        elif g.rc == 0:
            if not isinstance(gj, dict) or gj.get("bytes") != size:
                problems.append("get exit 0 but JSON %s (file is %d bytes)" % (str(gj)[:80], size))
            elif cat == "not_image":
                problems.append("get stored a %s body (%s)" % (row.get("format"), gj.get("content_type")))
            else:
                facts.append("get %s %dB" % (gj.get("content_type"), size))
        elif g.rc == 1 and one_error_line(g):
            facts.append("get error: %s" % g.err_line()[17:].replace(url + ": ", ""))
        else:
            problems.append("get %s, stderr %r" % (g.describe(), g.err[-200:]))

        # thumb: a thumbnail within the box, or a typed error.
        t = ac.run("thumb", url, "--size", "100x100", "--json", cache=cli_cache, timeout=OP_TIMEOUT)
        tj = t.json()
        if t.timed_out or t.signal:
            problems.append("thumb %s" % t.describe())
        elif t.rc == 0:
            ok = isinstance(tj, dict) and 1 <= (tj.get("width") or 0) <= 100 and 1 <= (tj.get("height") or 0) <= 100 \
                and (tj.get("bytes") or 0) > 0
            if not ok:
                problems.append("thumb exit 0 but JSON %s" % str(tj)[:100])
            elif cat in ("not_image", "corrupt") or bomb_strict:
                problems.append("thumb made a %sx%s thumbnail of a %s file" % (tj.get("width"), tj.get("height"), cat))
            elif flood:
                facts.append("thumb: the first frame of a %s-frame flood, %sx%s %.2fs" % (
                    row.get("pages"), tj.get("width"), tj.get("height"), t.secs))
            else:
                facts.append("thumb %sx%s %s %.2fs" % (tj.get("width"), tj.get("height"), tj.get("format"), t.secs))
        elif t.rc == 1 and one_error_line(t):
            msg = t.err_line()[17:].replace(url + ": ", "")
            facts.append("thumb error %.2fs: %s" % (t.secs, msg))
            if flood:
                problems.append("thumb refused a frame flood (its first frame is the answer): %s" % msg)
            if bomb_strict and "too large" not in msg.lower():
                problems.append("thumb refused a %sx%sx%s bomb without a too_large error: %s" % (
                    row.get("width"), row.get("height"), row.get("pages") or 1, msg))
        else:
            problems.append("thumb %s, stderr %r" % (t.describe(), t.err[-200:]))
        if cat == "bombs" and t.secs > bomb_bound:
            problems.append("thumb of a bomb took %.2fs (bound %.1fs)" % (t.secs, bomb_bound))

        # serve: an image, or a typed error status.
        status, hdrs, body_, secs, err = lib.http_get(sport, "/unsafe/100x100/%s" % lib.b64url(url),
                                                      timeout=OP_TIMEOUT)
        reason = hdrs.get("x-artcache-error")
        if status is None:
            problems.append("serve: %s after %.1fs" % (err, secs))
        elif status == 200 and not reason:
            ctype = hdrs.get("content-type", "")
            if not body_ or not any(body_.startswith(m) for m in MAGIC.get(ctype, [b""])) \
                    or not ctype.startswith("image/"):
                problems.append("serve 200 with %s, %d bytes that are not one" % (ctype, len(body_)))
            elif cat in ("not_image", "corrupt") or bomb_strict:
                problems.append("serve answered 200 %s for a %s file" % (ctype, cat))
            else:
                facts.append("serve 200 %s" % ctype)
            if t.rc == 1 and not t.timed_out:
                problems.append("serve rendered what thumb refused")
        elif status >= 400 and reason:
            facts.append("serve %d %s" % (status, reason))
            if reason not in REASONS:
                problems.append("serve reason %r is not a documented one" % reason)
            if bomb_strict and (status != 413 or reason != "too_large"):
                problems.append("serve answered %d %s to a bomb, expected 413 too_large" % (status, reason))
            if cat == "not_image" and reason != "not_an_image":
                problems.append("serve reason %s for a not_image body, expected not_an_image" % reason)
            if t.rc == 0:
                problems.append("serve refused what thumb rendered")
        else:
            problems.append("serve answered %s without a typed reason (body %r)" % (status, body_[:60]))
        if cat == "bombs" and secs > bomb_bound:
            problems.append("serve took %.2fs for a bomb (bound %.1fs)" % (secs, bomb_bound))
        if not serve.alive():
            problems.append("serve died: %s" % serve.output()[1][-300:])
            rep.check(rel, problems, "; ".join(facts))
            serve, sport = lib.start_serve(ac, serve_cache, log_dir=logs)
            continue
        rep.check(rel, problems, "; ".join(facts))

    # The same URLs in one prefetch --json: typed reasons only.
    listing = os.path.join(work, "corpus-urls.txt")
    with open(listing, "w") as f:
        f.write("".join(u + "\n" for u in urls))
    p = ac.run("prefetch", listing, "--json", cache=os.path.join(work, "cache-prefetch"), timeout=180)
    j = p.json() or {}
    problems = []
    if p.timed_out or p.signal or p.rc not in (0, 1) or not j:
        problems.append("prefetch %s %s" % (p.describe(), p.err_line()))
    failures = j.get("failures") or {}
    renders = j.get("render_failures") or {}
    unknown = sorted(set(failures) - REASONS - {k for k in failures if k.startswith("http_")}) + \
        sorted(set(renders) - RENDER_REASONS)
    if unknown:
        problems.append("undocumented reasons %s" % unknown)
    accounted = sum(j.get(k) or 0 for k in ("downloaded", "cached", "revalidated", "refused", "uncacheable", "failed"))
    if j and (j.get("requested") != len(urls) or accounted != len(urls)):
        problems.append("requested=%s, accounted=%d, urls=%d" % (j.get("requested"), accounted, len(urls)))
    rep.check("prefetch --json of the corpus", problems, "%s, downloaded=%s refused=%s failures=%s variants=%s "
              "render_failures=%s, %.1fs" % (p.describe(), j.get("downloaded"), j.get("refused"), failures,
                                             j.get("variants"), renders, p.secs))

    # serve is still healthy, then stops cleanly on SIGTERM.
    status = lib.http_get(sport, "/health", timeout=10)[0]
    t0 = time.monotonic()
    serve.send(15)
    rc, timed_out = serve.wait(timeout=30)
    out, err = serve.output()
    problems = []
    if status != 200:
        problems.append("/health answered %s" % status)
    if timed_out or rc != 0:
        problems.append("serve after SIGTERM: %s" % ("no exit in 30s" if timed_out else "exit %s" % rc))
    crash_words = [w for w in ("fatal error", "Fatal error", "Segmentation", "SIGSEGV", "database is locked")
                   if w in out + err]
    if crash_words:
        problems.append("serve log mentions %s" % crash_words)
    vr, vj = ac.verify(serve_cache, hash=True)
    vr2, vj2 = ac.verify(cli_cache, hash=True)
    if vr.rc != 0 or vr2.rc != 0:
        problems.append("verify --hash: serve cache %s %s, cli cache %s %s" % (
            vr.rc, lib.verify_counts(vj or {}), vr2.rc, lib.verify_counts(vj2 or {})))
    rep.check("serve health and shutdown", problems, "/health %s, SIGTERM -> exit %s in %.1fs; verify --hash "
              "clean on both caches" % (status, rc, time.monotonic() - t0))
    origin.kill_group()


if __name__ == "__main__":
    lib.main("R3", body)
