#!/usr/bin/env bash
# Writes a small seed corpus for each fuzz target into Fuzz/.corpus/<target>/
# (gitignored; libFuzzer adds what it finds to the same folders):
#   - hand-made inputs (below),
#   - tiny images made with the `vips` CLI when it is installed,
#   - the first bytes of ../shared/corpus images and its API bodies when that
#     folder exists (never copied into the repository: only into .corpus/),
#   - the reproducers of fixed bugs, Fuzz/regressions/<target>/*.
# Usage: Fuzz/seeds.sh [corpus-dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/.corpus}"
shared="${ARTCACHE_SHARED_CORPUS:-$here/../../shared/corpus}"
targets=(fuzz-sniffer fuzz-resultset fuzz-url fuzz-config fuzz-headers fuzz-jpeg)
for target in "${targets[@]}"; do mkdir -p "$out/$target"; done

# --- hand-made seeds ---------------------------------------------------------
# The config keys' declarations (found by name: the Sources layout may change).
config_keys="$(find "$here/../Sources" -name ConfigKeys.swift -type f 2>/dev/null | sort | head -1)"
[ -n "$config_keys" ] || { echo "seeds: no ConfigKeys.swift under Sources/" >&2; exit 1; }
python3 - "$out" "$config_keys" <<'PY'
import gzip, json, os, re, struct, sys, zlib

out, config_keys = sys.argv[1], sys.argv[2]

def put(target, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)

# fuzz-sniffer: one body per format the sniffer knows, and its near misses.
be32 = lambda v: struct.pack(">I", v)
le32 = lambda v: struct.pack("<I", v)
le16 = lambda v: struct.pack("<H", v)
def png_chunk(kind, payload):
    return be32(len(payload)) + kind + payload + be32(zlib.crc32(kind + payload))
png_sig = b"\x89PNG\r\n\x1a\n"
ihdr = png_chunk(b"IHDR", be32(1) + be32(1) + bytes([8, 6, 0, 0, 0]))
idat = png_chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00\x00"))
iend = png_chunk(b"IEND", b"")
def riff(kind, payload):
    return kind + le32(len(payload)) + payload + (b"\x00" if len(payload) % 2 else b"")
def webp(chunks):
    body = b"WEBP" + b"".join(chunks)
    return b"RIFF" + le32(len(body)) + body
def ftyp(major, compatible, extra=b""):
    payload = major + b"\x00\x00\x00\x00" + b"".join(compatible)
    return be32(len(payload) + 8) + b"ftyp" + payload + extra
def ispe(w, h):
    return be32(20) + b"ispe" + b"\x00\x00\x00\x00" + be32(w) + be32(h)
def gif(frames):
    body = b"GIF89a" + le16(1) + le16(1) + bytes([0x80, 0, 0]) + bytes([0, 0, 0, 255, 255, 255])
    body += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
    for _ in range(frames):
        body += b"\x21\xf9\x04\x00\x0a\x00\x00\x00"
        body += b"\x2c" + le16(0) + le16(0) + le16(1) + le16(1) + b"\x80" + bytes(range(1, 7))
        body += b"\x02\x02\x44\x01\x00"
    return body + b"\x3b"
jpeg = (b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        + b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 3, 4, 1) + b"\x01\x11\x00" + b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00"
        + b"\x00\xff\xd9")
bmp = b"BM" + le32(58) + b"\x00\x00\x00\x00" + le32(54) + le32(40) + le32(1) + le32(1) + le16(1) + le16(24) + b"\x00" * 28
ico = b"\x00\x00\x01\x00" + le16(1) + bytes([16, 16, 0, 0]) + le16(1) + le16(32) + le32(40) + le32(22) + b"\x00" * 40
svg = '<?xml version="1.0"?>\n<!-- c -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x" [ <!ENTITY e "<svg>"> ]>\n<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'
sniffer = {
    "jpeg.jpg": jpeg,
    "png.png": png_sig + ihdr + idat + iend,
    "apng.png": png_sig + ihdr + png_chunk(b"acTL", be32(2) + be32(0)) + idat + iend,
    "png-huge-chunk.png": png_sig + be32(0x7FFFFFFF) + b"tEXt" + b"x" * 8,
    "gif1.gif": gif(1),
    "gif2.gif": gif(2),
    "gif87.gif": b"GIF87a" + le16(1) + le16(1) + b"\x00\x00\x00\x2c" + b"\x00" * 9,
    "webp-vp8.webp": webp([riff(b"VP8 ", b"\x00" * 10)]),
    "webp-vp8l.webp": webp([riff(b"VP8L", b"\x2f" + b"\x00" * 4)]),
    "webp-vp8x-anim.webp": webp([riff(b"VP8X", bytes([0x02, 0, 0, 0, 9, 0, 0, 9, 0, 0])), riff(b"ANIM", b"\x00" * 6)]),
    "webp-vp8x.webp": webp([riff(b"VP8X", bytes([0x10, 0, 0, 0, 9, 0, 0, 9, 0, 0])), riff(b"ALPH", b"\x00" * 3), riff(b"VP8 ", b"\x00")]),
    "avif.avif": ftyp(b"avif", [b"mif1", b"miaf"], be32(8) + b"meta" + ispe(64, 48)),
    "avis.avif": ftyp(b"msf1", [b"avis", b"mif1"]),
    "heic.heic": ftyp(b"heic", [b"mif1", b"heic"], ispe(4000, 3000) + ispe(640, 480)),
    "heif.heif": ftyp(b"mif1", [b"heif"]),
    "ftyp-large.heic": be32(1) + b"ftyp" + be32(0) + be32(24) + b"heic" + b"\x00" * 4,
    "ftyp-zero.avif": be32(0) + b"ftypavif" + b"\x00" * 4 + b"mif1",
    "mp4.mp4": ftyp(b"isom", [b"iso2", b"mp41"]),
    "jxl-bare.jxl": b"\xff\x0a\x00\x00",
    "jxl-box.jxl": b"\x00\x00\x00\x0cJXL \x0d\x0a\x87\x0a" + be32(20) + b"ftypjxl " + b"\x00" * 8,
    "psd.psd": b"8BPS\x00\x01" + b"\x00" * 20,
    "pdf.pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n",
    "tiff-le.tif": b"II*\x00\x08\x00\x00\x00\x00\x00",
    "tiff-be.tif": b"MM\x00*\x00\x00\x00\x08\x00\x00",
    "bigtiff.tif": b"II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00",
    # One directory (width, height, 3 x 12 bits at an offset, tiles, planar): TIFFDirectory's fields.
    "tiff-ifd.tif": b"II*\x00" + le32(8) + le16(6)
        + b"".join(le16(tag) + le16(3) + le32(1) + le16(v) + le16(0) for tag, v in [(256, 16), (257, 8), (259, 1), (262, 2), (284, 2)])
        + le16(258) + le16(3) + le32(3) + le32(8 + 2 + 6 * 12 + 4) + le32(0) + le16(12) * 3,
    "bigtiff-ifd.tif": b"II+\x00" + le16(8) + le16(0) + le32(16) + le32(0) + le32(2) + le32(0)
        + b"".join(le16(tag) + le16(16) + le32(1) + le32(0) + le32(v) + le32(0) for tag, v in [(256, 16), (257, 8)]) + le32(0) * 2,
    "bmp.bmp": bmp,
    "ico.ico": ico,
    "cur.cur": b"\x00\x00\x02\x00" + ico[4:],
    "svg.svg": svg,
    "svg-plain.svg": "<svg:svg xmlns:svg='http://www.w3.org/2000/svg'/>",
    "svgz.svgz": gzip.compress(svg.encode(), mtime=0),
    "gzip-text.gz": gzip.compress(b"hello", mtime=0),
    "html.html": "<!doctype html><html><head><title>503</title></head><body>Service Unavailable</body></html>",
    "html-tag.html": "\n  <p>Not Found</p>",
    "xml.xml": "<?xml version='1.0' encoding='utf-8'?><rss version='2.0'/>",
    "json.json": '{"message": "Not Found", "documentation_url": "https://docs.github.com"}',
    "json-array.json": '[1, "two", {"three": [true, false, null]}]',
    "json-broken.json": '{"a": [1, 2',
    "text.txt": "just some text\r\nwith lines\tand tabs\n",
    "utf8-bom.txt": b"\xef\xbb\xbf<svg/>",
    "utf16le.txt": b"\xff\xfe" + "<svg xmlns='http://www.w3.org/2000/svg'/>".encode("utf-16-le"),
    "utf16be.txt": b"\xfe\xff" + '{"a": 1}'.encode("utf-16-be"),
    "controls.bin": bytes(range(1, 32)) * 2,
    "one.bin": b"\x00",
}
for name, data in sniffer.items():
    put("fuzz-sniffer", name, data)

# fuzz-resultset: the shapes of Tests/ArtCacheTests/ResultSetTests.swift.
resultsets = {
    "itunes.json": {"resultCount": 2, "results": [
        {"trackId": 1, "artworkUrl30": "https://a.example/1/30.jpg", "artworkUrl100": " https://a.example/1/100.jpg\n"},
        {"trackId": 2, "artworkUrl100": "https://a.example/1/100.jpg", "artworkUrl60": 60, "artworkUrl512": None}, "x"]},
    "itunes-error.json": {"errorMessage": "Invalid value(s) for key(s): [resultEntity]", "queryParameters": {}},
    "github-users.json": {"total_count": 2, "incomplete_results": False, "items": [
        {"login": "a", "avatar_url": "https://avatars.example/u/1?v=4"}, {"login": "b", "avatar_url": ""}]},
    "github-repos.json": {"total_count": 1, "items": [{"full_name": "a/b", "owner": {"login": "a", "avatar_url": "https://avatars.example/u/1"}}]},
    "github-empty.json": {"total_count": 0, "items": []},
    "github-code.json": {"total_count": 1, "items": [{"name": "x.swift", "path": "x.swift"}]},
    "github-error.json": {"message": "Validation Failed", "errors": [{"resource": "Search", "field": "q", "code": "missing"}, "text"],
                          "documentation_url": "https://docs.github.com"},
    "twitter-error.json": {"errors": [{"code": 109, "message": "The specified user is not a member of this list."}]},
    "twitter-user.json": {"screen_name": "a", "profile_image_url_https": "https://pbs.example/a_normal.jpg",
                          "status": {"text": "hi", "retweeted_status": {"user": {"screen_name": "b", "profile_image_url": "http://pbs.example/b.jpg"}}}},
    "twitter-statuses.json": {"statuses": [{"full_text": "x", "user": {"screen_name": "c", "profile_image_url_https": "https://pbs.example/c.png"},
                                            "quoted_status": {"text": "q", "user": {"screen_name": "d", "profile_image_url_https": " "}}}],
                              "search_metadata": {"count": 1}},
    "twitter-users.json": [{"screen_name": "a", "profile_image_url_https": "https://pbs.example/a.jpg"}, None, 3],
    "url-array.json": ["https://a.example/1.jpg", "", None, 4, " http://b.example/2.png "],
    "url-array-bad.json": ["https://a.example/1.jpg", "ftp://b.example/2.png"],
    "unknown.json": {"a": 1, "b": [], "c": {}},
    "scalar.json": [True],
}
for name, value in resultsets.items():
    put("fuzz-resultset", name, json.dumps(value))
put("fuzz-resultset", "urls.txt", "\ufeff# artwork\nhttps://a.example/1.jpg\n\n  http://b.example/2.png  \r\nhttps://a.example/1.jpg\n")
put("fuzz-resultset", "urls-bad.txt", "https://a.example/1.jpg\nnot a url\n")
put("fuzz-resultset", "bom-json.json", b"\xef\xbb\xbf  " + json.dumps(["https://a.example/x.jpg"]).encode())
put("fuzz-resultset", "deep.json", "[" * 40 + '"https://a.example/x"' + "]" * 40)
put("fuzz-resultset", "invalid.json", '{"results": [')

# fuzz-url: odd but real spellings.
urls = [
    "http://example.com", "HTTPS://Example.COM:443/a/./b/../c?", "http://example.com.:80/%7Euser/%2f%41?q=%3d#frag",
    "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.01:8080", "http://127.1", "http://[::1]/", "http://[0:0:0:0:0:ffff:7f00:1]:81/",
    "http://[2001:DB8::0:1]/x", "http://user:pass@example.com/", "ftp://example.com/", "http:///path", "http://exa mple.com/",
    "  https://example.com/a b  ", "http://example.com/a/../../..", "http://example.com/./.", "http://%65xample.com/",
    "http://example.com:0/", "http://example.com:65536/", "http://xn--bcher-kva.example/", "http://ex_ample.com/%zz%4",
    "https://example.com/?", "https://example.com/?a=%7e&b=%7E", "http://1.2.3.4.5/", "http://999.1.1.1/", "http://[fe80::1%25eth0]/",
    "http://example..com/", "https://a.example/images/cover.jpg?size=100x100", "http://0x/", "http://00/",
]
for index, url in enumerate(urls):
    put("fuzz-url", f"url-{index:02}.txt", url)

# fuzz-config: cache.conf snippets with every real key, and value spellings.
keys = re.findall(r'ConfigKey\(section: "(\w+)", name: "(\w+)", kind: \.(\w+)', open(config_keys).read())
samples = {"size": '"500MB"', "duration": '"30d"', "integer": "8", "ratio": "0.9", "bool": "true",
           "list": '["100x100", "300x300"]', "string": '"x"', "choice": '"auto"', "color": '"#ffffff"'}
sections = {}
for section, name, kind in keys:
    sections.setdefault(section, []).append(f"{name} = {samples.get(kind, '1')}")
put("fuzz-config", "all-keys.conf", "\n".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items()))
put("fuzz-config", "cache.conf", '[cache]\ndirectory = "~/cache"\nmax_size = "2GiB"\nmax_age = 2592000\nlow_water = 0.5\n'
    '[download]\ntimeout = "90s"\nallowed_networks = ["127.0.0.1/32", "fd00::/8"]\nallowed_sources = ["*.example.com"]\n'
    '[thumbnails]\nsizes = ["64x64"]\nbackground = "#000000"\nfit = "cover"\n[presets]\navatar = "100x100,fit=cover"\n')
put("fuzz-config", "relative.conf", '[cache]\ndirectory = "../x/./y"\ninline_max = 0\n[memory]\nmax_size = "1.5 MB"\n')
put("fuzz-config", "bad-type.conf", '[cache]\nmax_entries = 1.5\nmax_size = -1\n')
put("fuzz-config", "unknown.conf", '[nope]\nx = 1\n[cache]\nnope = 2\n')
put("fuzz-config", "syntax.conf", '[cache\nmax_size = \n')
put("fuzz-config", "inline-table.conf", 'cache = { max_size = "1TB", max_age = "2w" }\npresets = { a = 1 }\n')
put("fuzz-config", "units.txt", "500MB\n2GiB\n1024\n 1.5 kb \n30d\n12h\n90s\n0.5\n-1\n+7w\n")
put("fuzz-config", "environment.txt", "ARTCACHE_CACHE_MAX_SIZE=1GB\nARTCACHE_SERVICE_TIMEOUT=5s\nARTCACHE_PRESETS_THUMB=50x50\n"
    "ARTCACHE_DOWNLOAD_ALLOW_HTTP=no\nARTCACHE_THUMBNAILS_SIZES=10x10, 20x20\n")
put("fuzz-config", "big-numbers.txt", "9" * 30 + "w\n" + "9" * 320 + "\n1" + "0" * 18 + "\n")

# fuzz-headers: "Cache-Control\nExpires\nRetry-After".
headers = [
    "max-age=60\nThu, 01 Dec 1994 16:00:00 GMT\n120",
    "public, max-age=\"3600\", s-maxage=10\n\nWed, 21 Oct 2015 07:28:00 GMT",
    "no-cache\n0\n-1",
    "no-store, private\n-1\n",
    "Max-Age=0\nSunday, 06-Nov-94 08:49:37 GMT\nSun Nov  6 08:49:37 1994",
    "max-age=1e400\nSun Nov  6 08:49:37 1994\ninf",
    "max-age=abc\nMon, 32 Jan 2024 25:61:61 GMT\n3.5",
    "",
    "immutable, max-age=31536000",
]
for index, value in enumerate(headers):
    put("fuzz-headers", f"headers-{index:02}.txt", value)
# ... and request heads, as RawRequestHead reads a connection's bytes.
heads = [
    "GET /sig/100x100/aHR0cHM6Ly9oL2EuanBn HTTP/1.1\r\nHost: h\r\nAccept: image/avif,image/webp,*/*;q=0.8\r\n"
    "If-None-Match: \"abc\"\r\nConnection: keep-alive\r\n\r\nGET /a/b/c HTTP/1.1\r\n",
    "GET /a/b/c HTTP/1.1\r\nAccept:\t x \t\r\nAccept: y\r\n\r\n",
    "GET /a/b/c HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
]
for index, value in enumerate(heads):
    put("fuzz-headers", f"head-{index:02}.txt", value)
PY

# The repository's own example configuration.
[ -f "$here/../cache.conf" ] && cp "$here/../cache.conf" "$out/fuzz-config/repo-cache.conf"

# --- tiny images from libvips --------------------------------------------------
if command -v vips >/dev/null; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  vips black "$tmp/black.v" 5 3 --bands 3 2>/dev/null || true
  vips black "$tmp/alpha.v" 2 2 --bands 4 2>/dev/null || true
  for source in black alpha; do
    [ -f "$tmp/$source.v" ] || continue
    for ext in png jpg gif webp tif heic avif jxl; do
      vips copy "$tmp/$source.v" "$out/fuzz-sniffer/vips-$source.$ext" 2>/dev/null || rm -f "$out/fuzz-sniffer/vips-$source.$ext"
    done
  done
  # fuzz-jpeg: small JPEGs (colour, grey, 4:4:4, progressive), then each with an
  # EXIF orientation and an ICC profile segment spliced in after SOI.
  vips zone "$tmp/zone.v" 64 48 2>/dev/null && vips linear "$tmp/zone.v" "$tmp/zl.v" 127 128 --uchar 2>/dev/null \
    && vips bandjoin "$tmp/zl.v $tmp/zl.v $tmp/zl.v" "$tmp/rgb.v" 2>/dev/null || true
  [ -f "$tmp/rgb.v" ] && {
    vips copy "$tmp/rgb.v" "$out/fuzz-jpeg/rgb.jpg[Q=70]" 2>/dev/null || true
    vips copy "$tmp/rgb.v" "$out/fuzz-jpeg/rgb444.jpg[Q=90,subsample-mode=off]" 2>/dev/null || true
    vips copy "$tmp/rgb.v" "$out/fuzz-jpeg/progressive.jpg[interlace]" 2>/dev/null || true
    vips copy "$tmp/zl.v" "$out/fuzz-jpeg/grey.jpg" 2>/dev/null || true
  }
  python3 - "$out/fuzz-jpeg" <<'PY'
import os, struct, sys
folder = sys.argv[1]
def exif(orientation):
    ifd = struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    tiff = b"II*\x00" + struct.pack("<I", 8) + ifd
    body = b"Exif\x00\x00" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body
def icc(description):
    text = description.encode()
    desc = b"desc" + b"\x00" * 4 + struct.pack(">I", len(text) + 1) + text + b"\x00"
    header = bytearray(128); header[16:20] = b"RGB "
    table = struct.pack(">I", 1) + b"desc" + struct.pack(">II", 144, len(desc))
    profile = bytes(header) + table + desc
    body = b"ICC_PROFILE\x00\x01\x01" + profile
    return b"\xff\xe2" + struct.pack(">H", len(body) + 2) + body
for name in sorted(os.listdir(folder)):
    data = open(os.path.join(folder, name), "rb").read()
    if not data.startswith(b"\xff\xd8"): continue
    base = name.rsplit(".", 1)[0]
    for orientation in (3, 6, 8):
        open(os.path.join(folder, f"{base}-exif{orientation}.jpg"), "wb").write(data[:2] + exif(orientation) + data[2:])
    open(os.path.join(folder, f"{base}-srgb.jpg"), "wb").write(data[:2] + icc("sRGB IEC61966-2.1") + data[2:])
    open(os.path.join(folder, f"{base}-p3.jpg"), "wb").write(data[:2] + icc("Display P3") + data[2:])
PY
fi

# --- the shared real-world corpus, when present (first 16 KiB of each image) ---
if [ -d "$shared/images" ]; then
  find "$shared/images" -type f | while read -r file; do
    head -c 16384 "$file" > "$out/fuzz-sniffer/shared-$(basename "$(dirname "$file")")-$(basename "$file")"
  done
  # fuzz-jpeg: the corpus's JPEGs whole, when small (artwork and avatars).
  find "$shared/images" -type f -size -96k | while read -r file; do
    [ "$(head -c 2 "$file" | od -An -tx1 | tr -d ' ')" = "ffd8" ] || continue
    cp "$file" "$out/fuzz-jpeg/shared-$(basename "$(dirname "$file")")-$(basename "$file")"
  done
fi
if [ -d "$shared/api" ]; then
  for file in "$shared"/api/*.json; do
    head -c 65536 "$file" > "$out/fuzz-resultset/shared-$(basename "$file")"
  done
  # The dates of the recorded exchanges, as Expires and Retry-After.
  index=0
  grep -h -o -E '[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT' "$shared"/api/raw_replays/* 2>/dev/null \
    | sort -u | head -4 | while read -r date; do
      index=$((index + 1))
      printf 'no-cache\n%s\n%s' "$date" "$date" > "$out/fuzz-headers/shared-date-$index.txt"
    done
fi

# --- reproducers of fixed bugs --------------------------------------------------
for target in "${targets[@]}"; do
  if [ -d "$here/regressions/$target" ]; then
    cp "$here/regressions/$target"/* "$out/$target/" 2>/dev/null || true
  fi
done

for target in "${targets[@]}"; do
  echo "$target: $(find "$out/$target" -type f | wc -l) seeds in $out/$target"
done
