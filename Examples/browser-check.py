#!/usr/bin/env python3
"""The fronts in a real browser (Debian's chromium driven by playwright), all on loopback.

Starts a loopback API server (the bundled fixtures, image URLs pointing at a
loopback image origin), the image origin, `artcache-fronts` (in-process
images, then signed `artcache serve` URLs) and loads every page headless.
Checks, per page, at device scale factor 2: every <img> finished loading with
naturalWidth > 0 (placeholders included); iTunes artwork (the origin has every
{W}x{H}bb rendition) is at least 2x its CSS width; on a second load with every
image held back, each box the cache has seen shows its placeholder (ThumbHash
image over its colour) as its background, and no layout shift happens while
the images arrive; that load makes no image request to the origin; no request
left loopback; and with the API and origin down a page seen before still
renders from the cache. Saves a screenshot of each page.

    python3 Examples/browser-check.py --fronts BIN --artcache BIN
Prints one line per check and "N passed, N failed"; exit 1 on any failure.
"""
import argparse, http.server, ipaddress, json, os, re, shutil, signal, subprocess, sys, tempfile, threading, time
import urllib.request
from urllib.parse import urlparse, parse_qs

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "cd" * 32


def make_images(folder):
    """Small JPEG/PNG artwork made with libvips' CLI (no files committed)."""
    os.makedirs(folder, exist_ok=True)
    for i, (w, h) in enumerate([(600, 600), (100, 100), (460, 460), (200, 200)]):
        base = f"{folder}/g{i}.v"
        subprocess.run(["vips", "zone", base, str(w), str(h)], check=True)
        subprocess.run(["vips", "linear", base, f"{folder}/l{i}.v", str(60 + 40 * i), "127"], check=True)
        subprocess.run(["vips", "cast", f"{folder}/l{i}.v", f"{folder}/c{i}.v", "uchar"], check=True)
        subprocess.run(["vips", "falsecolour", f"{folder}/c{i}.v", f"{folder}/f{i}.v"], check=True)
        subprocess.run(["vips", "copy", f"{folder}/f{i}.v", f"{folder}/{i}.jpg[Q=85]"], check=True)
        subprocess.run(["vips", "copy", f"{folder}/f{i}.v", f"{folder}/{i}.png"], check=True)
    images = {name: open(f"{folder}/{name}", "rb").read() for name in ["0.jpg", "1.jpg", "2.jpg", "3.jpg", "0.png", "2.png"]}
    # An animated avatar (GitHub and Gravatar have them): three coloured frames, 300 ms each, looping.
    from PIL import Image, ImageDraw
    frames = []
    for i, colour in enumerate([(230, 40, 40), (40, 200, 60), (40, 60, 230)]):
        frame = Image.new("RGB", (200, 200), colour)
        ImageDraw.Draw(frame).rectangle([20 + 50 * i, 70, 80 + 50 * i, 130], fill=(255, 255, 255))
        frames.append(frame)
    frames[0].save(f"{folder}/anim.gif", save_all=True, append_images=frames[1:], duration=300, loop=0)
    images["anim.gif"] = open(f"{folder}/anim.gif", "rb").read()
    return images


class Origin(http.server.ThreadingHTTPServer):
    """The image origin: /img/ID/NAME (an image chosen by ID), /missing/… 404,
    /html/… an HTML page sent as image/jpeg, /slow/… never answers in time."""
    daemon_threads = True
    request_queue_size = 256  # the default listen backlog (5) refuses bursts of prefetch + browser

    def __init__(self, images, folder):
        self.images = images
        self.folder = folder
        self.renditions = {}
        self.requests = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), OriginHandler)  # port 0: the OS picks a free one
        self.port = self.server_address[1]


    def rendition(self, width, height):
        with self.lock:
            if (width, height) not in self.renditions:
                out = f"{self.folder}/r{width}x{height}.jpg"
                subprocess.run(["vips", "thumbnail", f"{self.folder}/0.jpg", out + "[Q=85]", str(width), "--height", str(height),
                                "--size", "force"], check=True)
                self.renditions[(width, height)] = open(out, "rb").read()
            return self.renditions[(width, height)]


class OriginHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_image(self, body, kind):
        """A 200 of `body` as `kind`, fresh for an hour."""
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=3600")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        server = self.server
        with server.lock:
            server.requests.append(self.path)
        parts = self.path.strip("/").split("/")
        sized = re.fullmatch(r"(\d{1,4})x(\d{1,4})bb\.jpg", parts[-1]) if parts[0] == "img" and len(parts) == 3 else None
        if sized:
            # An iTunes-style rendition: exactly the size the name asks for
            # (the provider has every size), made from the 600x600 artwork.
            self.send_image(server.rendition(int(sized.group(1)), int(sized.group(2))), "image/jpeg")
        elif parts[0] == "img" and self.path.endswith(".gif"):
            self.send_image(server.images["anim.gif"], "image/gif")
        elif parts[0] == "img":
            names = sorted(n for n in server.images if n != "anim.gif")
            body = server.images[names[sum(map(ord, parts[1])) % len(names)]] if len(parts) > 1 else b""
            if self.path.endswith(".png"):
                body = server.images["0.png"] if sum(map(ord, parts[1])) % 2 else server.images["2.png"]
            kind = "image/png" if body.startswith(b"\x89PNG") else "image/jpeg"
            self.send_image(body, kind if sum(map(ord, parts[1])) % 3 else "application/octet-stream")
        elif parts[0] == "html":
            body = b"<!DOCTYPE html><html><body>Not found</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif parts[0] == "slow":
            time.sleep(8)  # past the fronts' download timeout
            self.send_response(504)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


class API(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, origin):
        self.fixtures = {}
        for name in ["itunes_search", "github_repos", "github_users", "twitter_home_timeline"]:
            text = open(f"{HERE}/Fixtures/{name}.json").read().replace("{{ORIGIN}}", origin)
            self.fixtures[name] = text.encode()
        super().__init__(("127.0.0.1", 0), APIHandler)
        self.port = self.server_address[1]


class APIHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        routes = {"/search": "itunes_search", "/search/repositories": "github_repos", "/search/users": "github_users",
                  "/1.1/statuses/home_timeline.json": "twitter_home_timeline"}
        name = routes.get(url.path)
        if name is None:
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
        body = self.server.fixtures[name]
        term = (query.get("term") or query.get("q") or [""])[0]
        if term == "nothing":
            body = b'{"resultCount":0,"results":[]}' if name == "itunes_search" else b'{"total_count":0,"items":[]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(server):
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


class Started:
    """A child listening on 127.0.0.1 port 0: its stdout and stderr are copied to
    `log` by threads, which watch for the line that tells the port it got
    (`artcache serve`: "serving … on http://127.0.0.1:PORT" on stdout; the
    fronts: "fronts listening" with port=PORT on stderr)."""
    PATTERNS = [re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)"), re.compile(r"^(?=.*fronts listening).*?port=(\d+)")]

    def __init__(self, cmd, env, log):
        self.log = open(log, "w")
        self.port = None
        self.found = threading.Event()
        self.lock = threading.Lock()
        self.closed = 0
        self.process = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.threads = [threading.Thread(target=self._drain, args=(pipe,), daemon=True)
                        for pipe in (self.process.stdout, self.process.stderr)]
        for thread in self.threads:
            thread.start()

    def _drain(self, pipe):
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace")
            with self.lock:
                self.log.write(line)
                self.log.flush()
            match = next((m for m in (p.search(line) for p in self.PATTERNS) if m), None)
            if match and self.port is None:
                self.port = int(match.group(1))
                self.found.set()
        with self.lock:
            self.closed += 1
            if self.closed == 2:
                self.found.set()  # both pipes closed: the child exited (without telling a port, if none yet)

    def wait_port(self, seconds=60):
        """The port once the child has said it listens; None when it exits first or `seconds` pass."""
        self.found.wait(seconds)
        return self.port


def is_loopback(url):
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return url.startswith("data:") or url.startswith("about:")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fronts", required=True)
    parser.add_argument("--artcache", required=True)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = tempfile.mkdtemp(prefix="artcache-fronts-check.")
    shots = f"{work}/screenshots"
    os.makedirs(shots)
    images = make_images(f"{work}/images")
    origin = serve(Origin(images, f"{work}/images"))
    api = serve(API(f"http://127.0.0.1:{origin.port}"))
    origin_port, api_port = origin.port, api.port
    # The loopback origin's iTunes-style artwork (/img/ID/{W}x{H}bb.jpg) gets
    # the built-in itunes profile's rule: a profile of the check's own (the
    # built-in ones name public hosts).
    env = dict(os.environ, ARTCACHE_DOWNLOAD_ALLOWED_NETWORKS="127.0.0.0/8", ARTCACHE_DOWNLOAD_TIMEOUT="3s",
               ARTCACHE_DOWNLOAD_RETRIES="0", ARTCACHE_SERVICE_KEYS=KEY, ARTCACHE_SERVICE_FALLBACK="placeholder",
               ARTCACHE_PROFILES_LOOPITUNES="hosts=127.0.0.1 path=/img/ size=dimensions max=1200")
    results = []
    processes = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)

    def start(cmd):
        """Starts cmd (listening on 127.0.0.1:0) and returns the port it got, or None (a failed check)."""
        child = Started(cmd, env, f"{work}/log-{len(processes)}.txt")
        processes.append(child.process)
        port = child.wait_port()
        if port is None:
            check(f"{os.path.basename(cmd[0])} started and told its port", False, f"see {child.log.name}")
        return port

    pages = ["/itunes?term=jack+johnson&entity=album", "/itunes?term=nothing&entity=song", "/github/repos?q=swift",
             "/github/users?q=swift", "/github/users?q=octo", "/twitter"]
    try:
        # The service shares its cache with the service-mode front (whose prefetch warms it).
        service_port = start([args.artcache, "serve", "--listen", "127.0.0.1:0", "--cache-dir", f"{work}/cache-service"])
        if service_port is None:
            return 1
        modes = []
        for mode in ["inprocess", "service"]:
            cmd = [args.fronts, "--listen", "127.0.0.1:0", "--cache-dir", f"{work}/cache-{mode}",
                   "--itunes-api", f"http://127.0.0.1:{api_port}", "--github-api", f"http://127.0.0.1:{api_port}",
                   "--twitter-api", f"http://127.0.0.1:{api_port}", "--images", mode]
            if mode == "service":
                cmd += ["--service-url", f"http://127.0.0.1:{service_port}"]
            port = start(cmd)
            if port is None:
                return 1
            modes.append((mode, port))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            context = browser.new_context(device_scale_factor=2)
            # Layout shifts, summed (a regression guard: boxes have their size before images arrive).
            context.add_init_script("""window.__cls = 0; new PerformanceObserver(list => {
                for (const e of list.getEntries()) if (!e.hadRecentInput) window.__cls += e.value;
            }).observe({type: 'layout-shift', buffered: true});""")
            page = context.new_page()
            outside = []
            page.on("request", lambda r: outside.append(r.url) if not is_loopback(r.url) else None)

            def load(url):
                page.goto(url, wait_until="load", timeout=60000)
                page.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=60000)
                return page.evaluate("""Array.from(document.images).map(i => ({src: i.currentSrc, w: i.naturalWidth,
                    css: i.clientWidth, url: i.dataset.src, status: i.dataset.status}))""")

            def held_load(url, pattern):
                """Loads url with every image request held back until the boxes are checked;
                returns (boxes before any image arrived, images after, layout shift)."""
                held, released = [], []

                def hold(route):
                    if released:
                        route.continue_()
                    else:
                        held.append(route)
                page.route(pattern, hold)
                page.goto(url, wait_until="domcontentloaded", timeout=60000)
                boxes = page.evaluate("""Array.from(document.images).map(i => {
                    const style = getComputedStyle(i);
                    return {url: i.dataset.src, status: i.dataset.status, complete: i.complete && i.naturalWidth > 0,
                            image: style.backgroundImage, color: style.backgroundColor,
                            page: getComputedStyle(document.body).backgroundColor};
                })""")
                released.append(True)
                for route in held:
                    route.continue_()
                page.unroute(pattern)
                page.wait_for_load_state("load", timeout=60000)
                page.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=60000)
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                imgs = page.evaluate("""Array.from(document.images).map(i => ({src: i.currentSrc, w: i.naturalWidth}))""")
                return boxes, imgs, page.evaluate("window.__cls")

            for mode, port in modes:
                for path in pages:
                    base = f"http://127.0.0.1:{port}"
                    imgs = load(base + path)
                    broken = [i["src"] for i in imgs if i["w"] <= 0]
                    rows = page.locator("li").count()
                    expect_rows = 0 if "nothing" in path else 1
                    shot = f"{shots}/{mode}{path.replace('/', '_').replace('?', '_').replace('&', '_')}.png"
                    page.screenshot(path=shot, full_page=True)
                    check(f"{mode} {path}: {len(imgs)} images loaded, {rows} rows",
                          not broken and rows >= expect_rows and (rows == 0 or len(imgs) >= rows),
                          f"broken: {broken}" if broken else "")
                    if "nothing" in path:
                        check(f"{mode} {path}: empty view", page.locator(".empty").count() == 1)
                    if path.startswith("/itunes") and "nothing" not in path:
                        # At device scale 2, artwork the provider has at every size is never upscaled:
                        # the profile fetched a rendition at least twice the box.
                        # (naturalWidth of a srcset "2x" candidate is divided by 2: read the
                        # pixels of the source the browser chose from a fresh Image.)
                        pixels = page.evaluate("""Promise.all(Array.from(document.images).map(i => new Promise(r => {
                            const x = new Image(); x.onload = () => r(x.naturalWidth); x.onerror = () => r(0); x.src = i.currentSrc;
                        })))""")
                        artwork = [dict(i, px=px) for i, px in zip(imgs, pixels) if "/img/" in (i["url"] or "")]
                        small = [(i["url"], i["px"], i["css"]) for i in artwork if i["px"] < 2 * i["css"]]
                        check(f"{mode} {path}: {len(artwork)} artwork images at least 2x their CSS width",
                              len(artwork) >= 2 and not small, f"too small: {small}" if small else "")
                    with origin.lock:
                        origin.requests.clear()
                    # Second load, every image held back until the boxes are checked: what the
                    # cache has seen shows its placeholder (ThumbHash over its colour), not the page.
                    pattern = f"http://127.0.0.1:{service_port}/**" if mode == "service" else "**/image?**"
                    boxes, again, cls = held_load(base + path, pattern)
                    cached = [b for b in boxes if b["status"] == "cached"]
                    bare = [b["url"] for b in cached if not b["image"].startswith('url("data:image/png') or b["color"] == b["page"]]
                    expect_cached = 0 if "nothing" in path else 1
                    check(f"{mode} {path}: {len(cached)} cached boxes show their placeholder before the images arrive",
                          len(cached) >= expect_cached and not bare and not any(b["complete"] for b in boxes),
                          f"bare: {bare[:3]}" if bare else "")
                    check(f"{mode} {path}: no layout shift while images arrive late", cls == 0, f"CLS {cls}" if cls else "")
                    with origin.lock:  # failed images (404, HTML, timeout) are asked again; stored ones must not be
                        image_requests = [r for r in origin.requests if r.startswith("/img/")]
                    check(f"{mode} {path}: second load from the cache", not image_requests and all(i["w"] > 0 for i in again),
                          f"origin saw {image_requests[:3]}" if image_requests else "")
            # The animated avatar: through the service (f=auto), chromium takes
            # WebP and gets it animated (issue 52): the box shows another
            # frame later (frames are 300 ms; polled for up to 3 s). In
            # process, the front's /image route asks a fixed format: its
            # first frame.
            for mode, port in modes:
                load(f"http://127.0.0.1:{port}/github/users?q=swift")
                avatar = page.locator('img[data-src$="avatar.gif"]')
                first = avatar.screenshot()
                changed = False
                for _ in range(30):
                    page.wait_for_timeout(100)
                    if avatar.screenshot() != first:
                        changed = True
                        break
                src = avatar.evaluate("i => i.currentSrc")
                # Its type as chromium gets it for an <img> (its image Accept; the
                # service is another origin than the page, so not fetched from it).
                asked = urllib.request.Request(src, headers={"Accept": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"})
                with urllib.request.urlopen(asked, timeout=30) as answer:
                    kind = answer.headers.get("Content-Type")
                if mode == "service":
                    check(f"{mode}: the animated avatar is animated in chromium ({kind})", changed and kind == "image/webp")
                else:
                    check(f"{mode}: the animated avatar shows its first frame ({kind})", not changed and kind in ("image/png", "image/jpeg"))
            check("no request left loopback", not outside, f"{outside[:3]}" if outside else "")
            # Offline: API and origin down; the pages seen before still render.
            api.shutdown(); api.server_close(); origin.shutdown(); origin.server_close()
            for mode, port in modes:
                imgs = load(f"http://127.0.0.1:{port}/itunes?term=jack+johnson&entity=album")
                offline_rows = page.locator("li").count()
                page.screenshot(path=f"{shots}/{mode}_offline.png", full_page=True)
                check(f"{mode} offline: the iTunes results still render from the cache",
                      offline_rows == 4 and all(i["w"] > 0 for i in imgs) and page.locator(".notice").count() == 1)
            browser.close()
    finally:
        for p in processes:
            p.send_signal(signal.SIGTERM)
        for p in processes:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"screenshots: {shots}")
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
