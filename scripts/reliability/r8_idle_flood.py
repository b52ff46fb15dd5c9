#!/usr/bin/env python3
"""R8: a flood of idle connections. `artcache serve` runs with a 1,024
descriptor limit (RLIMIT_NOFILE set in the child before exec) and
[service] max_connections below it; 1,100 connections are opened and left
silent. Past max_connections the service stops accepting (the rest wait in
the kernel's backlog) instead of running out of descriptors; once the idle
ones are closed after [service] idle_timeout, /health answers again: within
idle_timeout + 2 s of the flood. serve then stops cleanly on SIGTERM."""
import os
import resource
import select
import signal
import socket
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repo
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

NOFILE = 1024          # serve's descriptor limit
MAX_CONNECTIONS = 900  # [service] max_connections: below NOFILE, with room for the cache's own files
IDLE = 5.0             # [service] idle_timeout
FLOOD = 1100           # idle connections opened

# Sets serve's RLIMIT_NOFILE, then becomes serve (exec: same pid, same process group).
LIMITED = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (%d, %d)); "
           "os.execv(sys.argv[1], sys.argv[1:])" % (NOFILE, NOFILE))


def start_limited_serve(ac, cache, log_dir):
    """`artcache serve --listen 127.0.0.1:0` under RLIMIT_NOFILE=NOFILE; returns (child, port)."""
    env = dict(ac.env, ARTCACHE_SERVICE_KEYS=os.urandom(32).hex(),
               ARTCACHE_SERVICE_IDLE_TIMEOUT="%gs" % IDLE,
               ARTCACHE_SERVICE_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
               ARTCACHE_SERVICE_ACCESS_LOG="false")
    args = [sys.executable, "-c", LIMITED, ac.bin, "serve", "--listen", "127.0.0.1:0", "--cache-dir", cache]
    child = lib.Child(args, env=env, cwd=ac.cwd, name="serve", log_dir=log_dir)
    line = lib.read_first_line(child, 60, "serving")
    if not line:
        out, err = child.output()
        raise RuntimeError("serve did not start (rc %s): %s" % (child.p.poll(), (err or out)[-500:]))
    hostport = line.rsplit("http://", 1)[-1].strip().rstrip("/")
    host, port = hostport.rsplit(":", 1)
    if host != "127.0.0.1":
        raise RuntimeError("serve listens on %s, not loopback" % host)
    return child, int(port)


def open_idle(port, count):
    """Opens up to `count` connections that never send a byte; returns them and the failures."""
    sockets, failures = [], 0
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect(("127.0.0.1", port))
            sockets.append(s)
        except OSError:
            failures += 1
            s.close()
    return sockets, failures


def wait_closed(sockets, deadline):
    """How many of `sockets` the server closed (end of file or reset) by `deadline`: waits on them with select."""
    open_ones = {s.fileno(): s for s in sockets}
    closed = 0
    while open_ones:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        poller = select.poll()   # not select(): descriptors past FD_SETSIZE (1024)
        for fd in open_ones:
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        ready = [fd for fd, _ in poller.poll(left * 1000)]
        for fd in ready:
            s = open_ones.pop(fd)
            try:
                data = s.recv(1)
            except OSError:
                data = b""
            if data == b"":
                closed += 1
    return closed


def body(rep, work, binary):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = FLOOD + 200
    if hard != resource.RLIM_INFINITY and hard < want:
        rep.skip("idle flood", "this runner may open only %d descriptors (needs %d)" % (hard, want))
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want) if hard == resource.RLIM_INFINITY else
                                                min(hard, max(soft, want)), hard))
    pool, logs = lib.workdirs(work)
    ac = lib.Artcache(binary, work)
    cache = os.path.join(work, "cache")
    serve, port = start_limited_serve(ac, cache, logs)
    status, _, _, secs, error = lib.http_get(port, "/health", timeout=30)
    rep.check("health before", [None if status == 200 else "status %s %s" % (status, error or "")], "%.2fs" % secs)

    flooded = time.monotonic()   # from the flood's start: the first connections go idle then
    sockets, failures = open_idle(port, FLOOD)
    # /health waits behind the flood (accepting paused at max_connections)
    # and must be answered once the idle connections are cut.
    status, _, _, _, error = lib.http_get(port, "/health", timeout=IDLE + 20)
    waited = time.monotonic() - flooded
    problems = []
    if status != 200:
        problems.append("/health: %s %s" % (status, error or ""))
    if waited > IDLE + 2:
        problems.append("/health answered after %.1fs, more than idle_timeout + 2 s (%.1fs)" % (waited, IDLE + 2))
    if not serve.alive():
        problems.append("serve exited (rc %s)" % serve.p.poll())
    rep.check("health after %d idle connections" % FLOOD, problems,
              "%d opened (%d failed), serve limited to %d fds and %d connections, /health in %.1fs" % (
                  len(sockets), failures, NOFILE, MAX_CONNECTIONS, waited))

    # Every idle connection is closed by the service (end of file), those
    # accepted after the first ones were cut too: within two idle deadlines.
    closed = wait_closed(sockets, deadline=flooded + 2 * IDLE + 5)
    rep.check("idle connections cut", [None if closed == len(sockets) else
                                       "only %d of %d connections closed by the service" % (closed, len(sockets))],
              "%d closed by the service within %.1fs" % (closed, time.monotonic() - flooded))
    for s in sockets:
        s.close()

    t1 = time.monotonic()
    serve.send(signal.SIGTERM)
    rc, timed_out = serve.wait(timeout=30)
    _, err = serve.output()
    problems = []
    if timed_out or rc != 0:
        problems.append("SIGTERM -> rc %s%s" % (rc, " (timed out)" if timed_out else ""))
    if "Too many open files" in err or "EMFILE" in err:
        problems.append("serve ran out of descriptors: %s" % [l for l in err.splitlines() if "open files" in l][:1])
    rep.check("serve shutdown", problems, "SIGTERM -> exit %s in %.1fs" % (rc, time.monotonic() - t1))


if __name__ == "__main__":
    lib.main("R8", body)
