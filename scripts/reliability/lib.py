"""Shared helpers for the reliability suite (python3 stdlib only).

- every child runs in its own process group and is killed (SIGKILL to the
  group) when the test exits, however it exits (atexit + SIGTERM/SIGINT/SIGHUP);
- every child has a timeout; every loop is bounded by a deadline;
- every server binds 127.0.0.1 port 0; every URL handed to artcache is checked
  to be http://127.0.0.1:PORT/...;
- the artcache CLI runs with a scrubbed environment (no ARTCACHE_* from the
  caller, no cache.conf from the working directory or XDG), a fresh cache
  directory per test, and loopback-only downloads
  (ARTCACHE_DOWNLOAD_ALLOWED_NETWORKS=127.0.0.0/8, ALLOWED_SOURCES=127.0.0.1).
"""
import atexit
import base64
import hashlib
import http.client
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.environ.get("RELIABILITY_CORPUS") or os.path.normpath(os.path.join(ROOT, "..", "shared", "corpus"))
INLINE_MAX = 65536          # [cache] inline_max default: blobs up to this size live in SQLite
BUILD_TIMEOUT = 3600        # SwiftPM may wait for another instance using .build

# --------------------------------------------------------------------------
# children and cleanup

_children = set()
_children_lock = threading.Lock()
_cleanups = []              # callables run at exit, last registered first
_shutting_down = threading.Event()   # once set, no new child is started


def _check_not_shutting_down():
    if _shutting_down.is_set():
        raise RuntimeError("shutting down: no new processes")


def _kill_group(pid, sig=signal.SIGKILL):
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all_children(grace=10.0):
    """SIGTERM to every child's process group (a test then cleans up its own
    children and mounts), SIGKILL to what is left after `grace` seconds."""
    with _children_lock:
        procs = list(_children)
        _children.clear()
    for p in procs:
        _kill_group(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:
            pass
    for p in procs:
        _kill_group(p.pid)
        try:
            p.wait(timeout=5)
        except Exception:
            pass


def at_exit(fn):
    _cleanups.append(fn)


def _run_cleanups(grace=10.0):
    _shutting_down.set()
    kill_all_children(grace)
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:  # keep cleaning up
            print("cleanup error: %s" % e, file=sys.stderr)


atexit.register(_run_cleanups)


def _on_signal(signum, frame):
    # Turn the signal into SystemExit so `finally` blocks (umount...) and atexit run.
    signal.signal(signum, signal.SIG_DFL)
    raise SystemExit(128 + signum)


def install_signal_handlers():
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _on_signal)


class Result:
    def __init__(self, args, rc, out, err, secs, timed_out):
        self.args, self.rc, self.out, self.err, self.secs, self.timed_out = args, rc, out, err, secs, timed_out

    @property
    def signal(self):
        """The signal that ended the process (None when it exited)."""
        return -self.rc if (self.rc is not None and self.rc < 0) else None

    def json(self):
        try:
            return json.loads(self.out)
        except (ValueError, TypeError):
            return None

    def crashed(self):
        return self.signal is not None and not self.timed_out

    def describe(self):
        if self.timed_out:
            return "timed out after %.1fs (killed)" % self.secs
        if self.signal:
            return "killed by signal %d (%s)" % (self.signal, signal.Signals(self.signal).name)
        return "exit %d" % self.rc

    def err_line(self, limit=200):
        lines = [l for l in self.err.splitlines() if l.strip()]
        return (lines[-1] if lines else "")[:limit]


def run(args, timeout, env=None, cwd=None, input=None):
    """Runs a child in its own process group; on timeout the whole group is killed."""
    _check_not_shutting_down()
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                         start_new_session=True)
    with _children_lock:
        _children.add(p)
    timed_out = False
    try:
        out, err = p.communicate(input=input.encode() if isinstance(input, str) else input, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(p.pid)
        out, err = p.communicate()
    finally:
        _kill_group(p.pid)   # stray grandchildren, if any
        with _children_lock:
            _children.discard(p)
    return Result(args, p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                  time.monotonic() - t0, timed_out)


class Child:
    """A long-running child in its own process group; stdout/stderr drained by threads."""

    def __init__(self, args, env=None, cwd=None, name=None, log_dir=None):
        _check_not_shutting_down()
        self.name = name or os.path.basename(args[0])
        self.args = args
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)
        with _children_lock:
            _children.add(self.p)
        self.pid = self.p.pid
        self.out_lines, self.err_lines = [], []
        self.err_times = []    # when each stderr line arrived (monotonic): progress lines are kill points
        self.cond = threading.Condition()
        self.log_dir = log_dir
        self.threads = [threading.Thread(target=self._drain, args=(self.p.stdout, self.out_lines, "out"), daemon=True),
                        threading.Thread(target=self._drain, args=(self.p.stderr, self.err_lines, "err"), daemon=True)]
        for t in self.threads:
            t.start()

    def _drain(self, pipe, sink, tag):
        f = open(os.path.join(self.log_dir, "%s-%d.%s" % (self.name, self.pid, tag)), "w") if self.log_dir else None
        try:
            for raw in iter(pipe.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                with self.cond:
                    sink.append(line)
                    if tag == "err":
                        self.err_times.append(time.monotonic())
                    self.cond.notify_all()
                if f:
                    f.write(line + "\n")
        finally:
            if f:
                f.close()
            with self.cond:
                self.cond.notify_all()

    def wait_line(self, predicate, timeout, stream="out"):
        """Waits (bounded) for an output line matching predicate; returns it or None."""
        sink = self.out_lines if stream == "out" else self.err_lines
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                while seen < len(sink):
                    line = sink[seen]
                    seen += 1
                    if predicate(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not any(t.is_alive() for t in self.threads)):
                    return None
                self.cond.wait(min(left, 0.2))

    def alive(self):
        return self.p.poll() is None

    def send(self, sig):
        if self.alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill_group(self, sig=signal.SIGKILL):
        _kill_group(self.pid, sig)

    def wait(self, timeout):
        """Waits for exit (bounded); kills the group on timeout. Returns (rc, timed_out)."""
        try:
            rc = self.p.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(self.pid)
            rc = self.p.wait(timeout=10)
            timed_out = True
        for t in self.threads:
            t.join(timeout=5)
        _kill_group(self.pid)
        with _children_lock:
            _children.discard(self.p)
        return rc, timed_out

    def output(self):
        with self.cond:
            return "\n".join(self.out_lines), "\n".join(self.err_lines)


def read_first_line(child, timeout, contains=""):
    return child.wait_line(lambda l: contains in l, timeout)


# --------------------------------------------------------------------------
# temp dirs, binary, environment

def make_tempdir(prefix):
    d = tempfile.mkdtemp(prefix="artcache-rel-%s-" % prefix)
    if not os.environ.get("RELIABILITY_KEEP"):
        at_exit(lambda: shutil.rmtree(d, ignore_errors=True))
    else:
        at_exit(lambda: print("kept %s" % d, file=sys.stderr))
    return d


def build_artcache():
    """`swift build --product artcache` (incremental) and the binary's path."""
    print("building artcache (swift build --product artcache)...", file=sys.stderr, flush=True)
    r = subprocess.run(["swift", "build", "--product", "artcache"], cwd=ROOT, stdout=sys.stderr,
                       stderr=sys.stderr, timeout=BUILD_TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError("swift build --product artcache failed (exit %d)" % r.returncode)
    r = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                       timeout=BUILD_TIMEOUT)
    return os.path.join(r.stdout.strip(), "artcache")


def resolve_bin(workdir):
    """ARTCACHE_BIN, else a build; copied into workdir so a concurrent rebuild of
    .build (another engineer's `swift build`) cannot change or lock it mid-test."""
    path = os.environ.get("ARTCACHE_BIN") or build_artcache()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise RuntimeError("artcache binary not found or not executable: %s" % path)
    if os.environ.get("RELIABILITY_BIN_SNAPSHOT") == path:
        return path
    last = ""
    for _ in range(5):  # bounded: a concurrent link may be rewriting the file
        snap = os.path.join(workdir, "artcache")
        shutil.copy2(path, snap)
        r = run([snap, "--version"], timeout=30)
        if r.rc == 0:
            return snap
        last = r.err_line() or r.describe()
        time.sleep(2)
    raise RuntimeError("artcache --version fails: %s" % last)


def cli_env(workdir, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ARTCACHE_") and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    home = os.path.join(workdir, "home")
    os.makedirs(os.path.join(home, ".config"), exist_ok=True)
    env.update({
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "ARTCACHE_DOWNLOAD_ALLOWED_NETWORKS": "127.0.0.0/8",
        "ARTCACHE_DOWNLOAD_ALLOWED_SOURCES": "127.0.0.1",
        "LC_ALL": "C.UTF-8",
    })
    env.update(extra or {})
    return env


def assert_loopback(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or u.hostname != "127.0.0.1":
        raise RuntimeError("refusing non-loopback URL %r" % url)
    return url


class Artcache:
    """The CLI, run from an empty working directory (so no ./cache.conf is read)."""

    def __init__(self, binary, workdir, env=None):
        self.bin = binary
        self.cwd = os.path.join(workdir, "cwd")
        os.makedirs(self.cwd, exist_ok=True)
        self.env = cli_env(workdir, env)

    def _args(self, args, cache):
        for a in args:
            if isinstance(a, str) and a.startswith("http"):
                assert_loopback(a)
        return [self.bin] + [str(a) for a in args] + (["--cache-dir", cache] if cache else [])

    def run(self, *args, cache=None, timeout=60, env=None, input=None):
        e = dict(self.env, **(env or {}))
        return run(self._args(args, cache), timeout=timeout, env=e, cwd=self.cwd, input=input)

    def spawn(self, *args, cache=None, env=None, name=None, log_dir=None):
        e = dict(self.env, **(env or {}))
        return Child(self._args(args, cache), env=e, cwd=self.cwd, name=name or "artcache-%s" % args[0],
                     log_dir=log_dir)

    def stats(self, cache, timeout=30):
        r = self.run("stats", "--json", cache=cache, timeout=timeout)
        j = r.json()
        if r.rc != 0 or not isinstance(j, dict):
            raise RuntimeError("stats --json: %s %s" % (r.describe(), r.err_line()))
        return j

    def verify(self, cache, hash=True, repair=False, timeout=120):
        args = ["verify", "--json"] + (["--hash"] if hash else []) + (["--repair"] if repair else [])
        r = self.run(*args, cache=cache, timeout=timeout)
        return r, r.json()


def verify_counts(j):
    keys = ("missing_blobs", "size_mismatches", "hash_mismatches", "orphan_blobs", "temp_files", "totals_mismatch")
    return {k: j.get(k) for k in keys if j.get(k)}


def problem_kinds(j):
    kinds = {}
    for p in (j or {}).get("problems", []) or []:
        kinds[p.get("kind")] = kinds.get(p.get("kind"), 0) + 1
    return kinds


# --------------------------------------------------------------------------
# images (vips CLI)

def vips(*args, timeout=120):
    r = run(["vips"] + [str(a) for a in args], timeout=timeout)
    if r.rc != 0:
        raise RuntimeError("vips %s: %s %s" % (" ".join(map(str, args)), r.describe(), r.err_line()))


def make_noise_jpeg(path, width, height, quality, sigma=40):
    tmp = path + ".v"
    vips("gaussnoise", tmp, width, height, "--mean", 128, "--sigma", sigma)
    vips("copy", tmp, "%s[Q=%d]" % (path, quality))
    os.unlink(tmp)
    return os.path.getsize(path)


def make_large(path, width=400, quality=90):
    size = make_noise_jpeg(path, width, width, quality)
    if size <= INLINE_MAX:
        raise RuntimeError("%s is %d bytes, not a large (file) blob" % (path, size))
    return size


def make_small(path, width=96):
    """A small image (< inline_max: stored inside SQLite): noise JPEG or flat PNG."""
    if path.endswith(".png"):
        tmp = path + ".v"
        vips("black", tmp + "0.v", width, width * 3 // 4, "--bands", 3)
        vips("linear", tmp + "0.v", tmp, 1, 60 + len(path) % 100)
        vips("copy", tmp, path)
        os.unlink(tmp)
        os.unlink(tmp + "0.v")
        size = os.path.getsize(path)
    else:
        size = make_noise_jpeg(path, width, width, 80, sigma=25)
    if size >= INLINE_MAX:
        raise RuntimeError("%s is %d bytes, not a small (inline) blob" % (path, size))
    return size


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


# --------------------------------------------------------------------------
# origins and HTTP

def start_origin_process(root, log_dir=None, faulty=False):
    """origin.py in its own process (and process group); returns (child, port)."""
    args = [sys.executable, "-B", "-u", os.path.join(HERE, "origin.py"), "--root", root] + (["--faulty"] if faulty else [])
    child = Child(args, name="origin", log_dir=log_dir)
    line = read_first_line(child, 20, "listening 127.0.0.1 ")
    if not line:
        raise RuntimeError("origin did not start: %s" % "\n".join(child.output()))
    port = int(line.split()[-1])
    wait_http(port, "/_requests", 20)
    return child, port


def refusing_port():
    """A 127.0.0.1 port where nothing listens, held for the rest of the test: a
    socket bound to port 0 that never listens keeps the port, so no other
    process can take it, and a connect to it gets ECONNREFUSED. (Binding,
    closing and connecting later would race with anyone who binds port 0.)
    The socket stays open until the test exits."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    at_exit(s.close)   # the closure keeps the socket alive until then
    return s.getsockname()[1]


def http_get(port, path, timeout=30, headers=None):
    """GET http://127.0.0.1:port/path; returns (status|None, headers, body, seconds, error)."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        return resp.status, hdrs, body, time.monotonic() - t0, None
    except Exception as e:
        return None, {}, b"", time.monotonic() - t0, "%s: %s" % (type(e).__name__, e)
    finally:
        conn.close()


def wait_http(port, path, timeout):
    """Confirms a server that said it listens answers (any status): one
    request, no polling (its ready line came after it bound the port)."""
    status, _, _, _, error = http_get(port, path, timeout=timeout)
    if status is None:
        raise RuntimeError("nothing answers on 127.0.0.1:%d%s: %s" % (port, path, error))
    return True


def b64url(text):
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def start_serve(ac, cache, log_dir=None, env=None, timeout=60):
    """`artcache serve --listen 127.0.0.1:0`; waits for its first stdout line. Returns (child, port)."""
    key = os.urandom(32).hex()
    e = {"ARTCACHE_SERVICE_KEYS": key, "ARTCACHE_SERVICE_ALLOW_UNSIGNED": "true"}
    e.update(env or {})
    child = ac.spawn("serve", "--listen", "127.0.0.1:0", cache=cache, env=e, name="serve", log_dir=log_dir)
    line = read_first_line(child, timeout, "serving")
    if not line:
        rc = child.p.poll()
        out, err = child.output()
        raise RuntimeError("serve did not start (rc %s): %s" % (rc, (err or out)[-500:]))
    # "artcache: serving DIR on http://HOST:PORT"
    hostport = line.rsplit("http://", 1)[-1].strip().rstrip("/")
    host, port = hostport.rsplit(":", 1)
    if host != "127.0.0.1":
        raise RuntimeError("serve listens on %s, not loopback" % host)
    wait_http(int(port), "/health", 30)
    return child, int(port)


# --------------------------------------------------------------------------
# reporting

class Reporter:
    def __init__(self, test):
        self.test = test
        self.passed = self.failed = self.skipped = 0
        self.t0 = time.monotonic()

    def _print(self, line):
        print(line, flush=True)

    def ok(self, case, detail=""):
        self.passed += 1
        self._print("%s %s: ok%s" % (self.test, case, " (%s)" % detail if detail else ""))

    def fail(self, case, why):
        self.failed += 1
        self._print("%s %s: FAIL: %s" % (self.test, case, why))

    def skip(self, case, why):
        self.skipped += 1   # reported as skipped, never counted as passed
        self._print("%s %s: skipped (%s)" % (self.test, case, why))

    def check(self, case, problems, detail=""):
        problems = [p for p in problems if p]
        if problems:
            self.fail(case, "; ".join(problems) + (" [%s]" % detail if detail else ""))
        else:
            self.ok(case, detail)
        return not problems

    def finish(self):
        self._print("%s done in %.1fs" % (self.test, time.monotonic() - self.t0))
        self._print("%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped))
        return 1 if self.failed else 0


def main(test, body):
    """Runs body(reporter, workdir, artcache_bin) with cleanup, prints the totals, exits."""
    install_signal_handlers()
    rep = Reporter(test)
    rc = 1
    try:
        work = make_tempdir(test)
        binary = resolve_bin(work)
        body(rep, work, binary)
    except SystemExit as e:
        rep.fail("harness", "interrupted (%s)" % e.code)
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        rep.fail("harness", "%s: %s" % (type(e).__name__, e))
    finally:
        rc = rep.finish()
        _run_cleanups()
    sys.exit(rc)


def env_float(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return float(default)


def workdirs(work):
    """Makes and returns (pool, logs) under `work`: the images the origin
    serves, and the CLI runs' logs."""
    pool = os.path.join(work, "pool")
    logs = os.path.join(work, "logs")
    os.makedirs(pool)
    os.makedirs(logs)
    return pool, logs


# --------------------------------------------------------------------------
# seeds and kill points: no clock decides what a test draws or whether it kills

def seed_for(name):
    """The seed of a test's random choices: $NAME (an integer), else the
    commit's first 8 hex digits as a decimal (what .ci/run exports and
    Fuzz/run uses), else 1 outside a git checkout. Never the clock: a rerun
    of a commit draws the same numbers. Returns (seed, where it came from)."""
    value = os.environ.get(name)
    if value:
        try:
            return int(value), name
        except ValueError:
            raise RuntimeError("%s must be an integer, not %r" % (name, value))
    try:
        r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "-q", "HEAD"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=30)
        commit = r.stdout.strip() if r.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        commit = ""
    if len(commit) >= 8:
        return int(commit[:8], 16), "commit %s" % commit[:8]
    return 1, "not a git checkout: the fixed fallback"


def prefetch_summary(out):
    """`prefetch`'s summary from its stdout: the --json object, else the text
    summary's counts (requested, cached, revalidated, downloaded, refused,
    failed, variants, render_failures as a count); None when there is none."""
    try:
        j = json.loads(out)
        if isinstance(j, dict):
            return j
    except ValueError:
        pass
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("requested", "cached", "revalidated", "downloaded", "refused", "failed",
                                            "variants") and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
            if parts[0] == "variants" and len(parts) >= 4 and parts[3].isdigit():
                counts["render_failures"] = int(parts[3])
    return counts if "requested" in counts else None


def progress_percent(line):
    """The percentage of a `prefetch` progress line ("progress D/T bytes=…"), else None."""
    parts = line.split()
    if len(parts) >= 2 and parts[0] == "progress" and "/" in parts[1]:
        done, _, total = parts[1].partition("/")
        if done.isdigit() and total.isdigit() and int(total) > 0:
            return int(done) * 100 // int(total)
    return None


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if s else None


class ProgressKill:
    """When to SIGKILL one `prefetch` child, by its own progress, not by a clock.

    The child runs without --json, so it prints `progress D/T …` on stderr
    each time it passes a 10% mark (stderr is not a terminal). The plan is a
    mark `step` (0 = the spawn, 1 = 10% done, …) and a fraction `frac` of one
    step: the kill comes `frac` × `pace` seconds after the mark's line, where
    `pace` is the time one 10% step took in earlier runs on this machine (a
    measurement, not a constant), and at the latest when the next mark's line
    arrives. With step + 1 below 10 the next mark always comes before the
    last items are done, so every planned kill happens, on a fast machine and
    on a slow one; without a pace yet (the first runs) it comes at that next
    mark. The seed picks step and frac; the machine only stretches the time."""

    def __init__(self, child, step, frac, pace):
        self.child, self.step, self.frac, self.pace = child, step, frac, pace
        self.seen = 0
        self.marks = []                        # (percent, monotonic time) of each progress line
        self.anchor = child.t0 if step == 0 else None
        self.at = None                         # (percent seen, seconds since spawn) when due

    def due(self, now=None):
        now = time.monotonic() if now is None else now
        if self.at:
            return True
        with self.child.cond:
            lines = self.child.err_lines[self.seen:]
            times = self.child.err_times[self.seen:]
            self.seen += len(lines)
        for line, t in zip(lines, times):
            percent = progress_percent(line)
            if percent is None:
                continue
            self.marks.append((percent, t))
            if self.anchor is None and percent // 10 >= self.step:
                self.anchor = t
            if percent // 10 >= self.step + 1:
                self.at = (percent, t - self.child.t0)
                return True
        if self.anchor is not None and self.pace is not None and now - self.anchor >= self.frac * self.pace:
            self.at = (self.marks[-1][0] if self.marks else 0, now - self.child.t0)
            return True
        return False

    def start_seconds(self):
        """Seconds from the spawn to the first progress line (None before it)."""
        return self.marks[0][1] - self.child.t0 if self.marks else None

    def step_seconds(self):
        """Seconds per 10% step between the progress lines seen (one value per gap)."""
        gaps = []
        for (p0, t0), (p1, t1) in zip(self.marks, self.marks[1:]):
            steps = p1 // 10 - p0 // 10
            if steps > 0:
                gaps.append((t1 - t0) / steps)
        return gaps

    def describe(self):
        where = "%d%% + %.2f step" % (10 * self.step, self.frac)
        if self.at:
            return "killed at %.2fs, %d%% done (plan %s)" % (self.at[1], self.at[0], where)
        return "plan %s" % where


class Pace:
    """What earlier runs measured: seconds from spawn to the first progress
    line, and per 10% step after it (medians feed ProgressKill's pace)."""

    def __init__(self):
        self.starts, self.steps = [], []

    def add(self, plan):
        if plan.start_seconds() is not None:
            self.starts.append(plan.start_seconds())
        self.steps += plan.step_seconds()

    def for_step(self, step):
        return median(self.starts) if step == 0 else median(self.steps)
