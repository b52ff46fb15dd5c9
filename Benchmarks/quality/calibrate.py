#!/usr/bin/env python3
"""Quality per format (issue 35, item 1). Run through ./calibrate (it fetches the
photographs and pins this to one core); see README.md beside this file.

For each size (100/300/600 px) and each JPEG q the mean SSIMULACRA distance of
our JPEG to the resized original is the target; for WebP (methods 0/2/4), AVIF
(aom speeds 9/8/6/5) and JPEG XL (libjxl efforts 1-7, issue 52) the quality
with the same mean distance is found on a grid of measured qualities (linear between the two grid points around it,
rounded). At each chosen point: mean bytes, encode CPU ms per image on one core,
and Butteraugli on a subset as a cross-check.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pyvips

from outputs import write_swift, write_tsv

SIZES = (100, 300, 600)
JPEG_QS = (50, 60, 70, 75, 80, 85, 90, 95)
# WebP method; AVIF aom speed; JPEG XL libjxl effort (issue 52: 1-7).
EFFORTS = {"webp": (0, 2, 4), "avif": (9, 8, 6, 5), "jxl": (1, 2, 3, 4, 5, 6, 7)}
CODECS = ("webp", "avif", "jxl")
# The efforts the rules may pick: all measured, but JPEG XL from 3, the
# least libvips 8.14's jxlsave accepts (its `effort` is 3-9; libjxl's 1 and 2
# make effort 3's pixels in 2-10% more bytes, no faster: README).
PICKABLE = {"jxl": lambda effort: effort >= 3}
# Grids of codec qualities, dense where the JPEG range 50-95 lands (see the
# README: JPEG q50 ~ WebP 40s / AVIF 30s, JPEG q95 ~ WebP 90s / AVIF 80s).
# AVIF is 4:2:0 below Q90 and 4:4:4 from it (AVIFEncoder): a step, so the grid
# has both sides of it (89, 90) and no match is interpolated across it (JUMPS).
# JPEG XL's quality is libvips jxlsave's Q (distance 0.1 + (100 - Q) * 0.09
# from Q30, enctime.c's jxl_distance).
GRID = {"webp": (40, 55, 65, 75, 85, 92, 100),
        "avif": (25, 40, 50, 60, 70, 80, 89, 90, 95, 100),
        "jxl": (25, 40, 50, 60, 70, 80, 90, 95, 100)}
QUICK_GRID = {"webp": (40, 65, 85, 100), "avif": (25, 50, 70, 89, 90, 95), "jxl": (25, 50, 70, 90, 100)}
JUMPS = {"webp": (), "avif": ((89, 90),), "jxl": ()}
POLICY_Q = 80          # the default `[thumbnails] quality`: efforts, bytes and ms are judged here
BYTES_SLACK = 1.05     # the effort rule: fastest effort within 5% of the fewest bytes
# The cold rule (issue 51): per codec and size, the effort with the fewest
# bytes among those whose encode costs at most this much of AVIF speed 9's at
# that size (the cold answer's encode before: an answer waits for it).
COLD_BUDGET = 1.10
COLD_REFERENCE = ("avif", 9)
CHECK_QS = (80,)  # JPEG qs whose chosen points get the Butteraugli cross-check


def encode(codec, image, quality, effort):
    """The bytes our service would send for this setting (JPEG, WebP; AVIF
    is encoded by enctime, as the service calls libheif: Bench.encoded)."""
    if codec == "jpeg":
        # TurboJPEG.swift: baseline, standard Huffman tables, 4:2:0 below q90 and
        # 4:4:4 from q90, no metadata: libvips' jpegsave defaults, spelled out.
        return image.jpegsave_buffer(Q=quality, strip=True, optimize_coding=False, interlace=False,
                                     subsample_mode="auto")
    if codec == "webp":
        # libvips webpsave = libwebp's default preset with method = effort (the
        # service's WebPEncodeRGB is the same preset at method 4).
        return image.webpsave_buffer(Q=quality, effort=effort, strip=True)
    raise ValueError(codec)


def payload(codec, data):
    """The bytes the service sends. libvips 8.14's webpsave adds a VP8X and an
    EXIF chunk (~200 bytes) even with strip; the service's WebP is libwebp's
    simple format (RIFF + one VP8 chunk), so that is what is counted."""
    if codec != "webp":
        return len(data)
    k = 12
    while k + 8 <= len(data):
        n = int.from_bytes(data[k + 4:k + 8], "little")
        if data[k:k + 4] == b"VP8 ":
            return 12 + 8 + n + (n & 1)
        k += 8 + n + (n & 1)
    return len(data)


def run_tool(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def save_json(path, value):
    """Writes `value` to `path` whole: a new file, then renamed over it."""
    with open(path + ".new", "w") as f:
        json.dump(value, f)
    os.replace(path + ".new", path)


def decoded_png(data, path):
    """`data` (any format libvips reads) decoded to sRGB and written as a PNG
    at `path`, for the metrics' command-line tools; returns `path`."""
    pyvips.Image.new_from_buffer(data, "").colourspace("srgb").pngsave(path, compression=1)
    return path


def ssimulacra(ref, dist):
    return float(run_tool(["ssimulacra_main", ref, dist]).split()[0])


def butteraugli(ref, dist):
    text = run_tool(["butteraugli_main", ref, dist])
    pnorm = re.search(r"3-norm:\s*([0-9.eE+-]+)", text)
    return float(text.split()[0]), float(pnorm.group(1)) if pnorm else float("nan")


class Bench:
    def __init__(self, args):
        self.quick = args.quick
        names = sorted((f for f in os.listdir(args.photos) if re.fullmatch(r"p\d+\.png", f)),
                       key=lambda f: int(f[1:-4]))
        # Crops come six per photo (left/centre/right x top/bottom). The sample:
        # the centre-bottom crop of every photo, then the left-top one (24 of
        # 72 in all); --crops N takes the first N of that order (so a smaller
        # run is a prefix of a larger one and their measurements are shared),
        # --quick the first 6.
        order = [n for pick in (3, 0) for n in names if int(n[1:-4]) % 6 == pick]
        self.names = order[:6 if self.quick else args.crops]
        # Butteraugli is slow: the cross-check uses every other crop of the sample.
        self.check = list(range(0, len(self.names), 2))
        self.grid = QUICK_GRID if self.quick else GRID
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else args.work
        self.tmp = os.path.join(shm, f"artcache-quality-{os.getpid()}")
        os.makedirs(self.tmp, exist_ok=True)
        self.cache_path = os.path.join(args.work, "points.json")
        self.cache = {}
        if os.path.exists(self.cache_path) and not args.fresh:
            self.cache = json.load(open(self.cache_path))
        self.enctime = args.enctime
        self.refs = {}   # size -> [(image in memory, path of its PNG)]
        self.raw = {}    # size -> [paths of the same pixels as raw RGB, for enctime]
        for size in SIZES:
            refs = []
            for i, name in enumerate(self.names):
                crop = pyvips.Image.new_from_file(os.path.join(args.photos, name)).colourspace("srgb")
                assert crop.width == 600 and crop.height == 600, name
                # Cover, square, from a square crop: a plain Lanczos-3 resize.
                ref = crop.resize(size / 600, kernel="lanczos3").copy_memory()
                assert (ref.width, ref.height, ref.bands, ref.format) == (size, size, 3, "uchar"), name
                path = os.path.join(self.tmp, f"ref-{size}-{i}.png")
                ref.pngsave(path, compression=1)
                refs.append((ref, path))
                raw = os.path.join(self.tmp, f"ref-{size}-{i}.rgb")
                with open(raw, "wb") as f:
                    f.write(ref.write_to_memory())
                self.raw.setdefault(size, []).append(raw)
            self.refs[size] = refs

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def save_cache(self):
        save_json(self.cache_path, self.cache)

    def decoded(self, data, i):
        return decoded_png(data, os.path.join(self.tmp, f"dist-{i}.png"))

    def encoded(self, codec, size, effort, quality, indices):
        """The bytes of crops `indices` at this setting. AVIF through enctime
        (AVIFEncoder.swift's libheif calls and options, in C), JPEG XL too
        (libvips jxlsave's libjxl calls, one thread): one process for all
        of them."""
        if codec not in ("avif", "jxl"):
            return [encode(codec, self.refs[size][i][0], quality, effort) for i in indices]
        out = os.path.join(self.tmp, codec)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        run_tool([self.enctime, f"{codec}-files", str(quality), str(effort), str(size), out]
                 + [self.raw[size][i] for i in indices])
        data = []
        for k in range(len(indices)):
            with open(os.path.join(out, f"{k}.{codec}"), "rb") as f:
                data.append(f.read())
        return data

    def point(self, codec, size, effort, quality):
        """Mean SSIMULACRA and mean bytes over the sample. Each crop's values
        are cached across runs (a larger sample reuses a smaller one's)."""
        keys = [f"{codec}/{size}/{effort}/{quality}/{name}" for name in self.names]
        missing = [i for i, key in enumerate(keys) if key not in self.cache]
        if missing:
            for i, data in zip(missing, self.encoded(codec, size, effort, quality, missing)):
                self.cache[keys[i]] = [ssimulacra(self.refs[size][i][1], self.decoded(data, i)), payload(codec, data)]
            self.save_cache()
        dist = [self.cache[key][0] for key in keys]
        sizes = [self.cache[key][1] for key in keys]
        return {"ssimulacra": sum(dist) / len(dist), "bytes": sum(sizes) / len(sizes)}

    def cross_check(self, codec, size, effort, quality):
        """SSIMULACRA and Butteraugli (max, 3-norm) means over the check subset."""
        key = f"check/{codec}/{size}/{effort}/{quality}/{','.join(self.names[i] for i in self.check)}"
        if key not in self.cache:
            ss, bmax, bnorm = [], [], []
            for i, data in zip(self.check, self.encoded(codec, size, effort, quality, self.check)):
                path = self.refs[size][i][1]
                dist = self.decoded(data, i)
                ss.append(ssimulacra(path, dist))
                m, n = butteraugli(path, dist)
                bmax.append(m)
                bnorm.append(n)
            k = len(self.check)
            self.cache[key] = {"ssimulacra": sum(ss) / k, "max": sum(bmax) / k, "pnorm3": sum(bnorm) / k}
            self.save_cache()
        return self.cache[key]

    def encode_ms(self, codec, size, effort, quality):
        """CPU ms per encode on this (one) core and the mean bytes: the
        fastest of several passes over the sample, each pass timed with the
        process CPU clock (other people's load does not count; all of the
        encoder's threads do). JPEG and WebP as the service calls them:
        TurboJPEG, libwebp and libheif directly (enctime.c; libvips' call
        costs ~0.5 ms more than the encode itself); JPEG XL as libvips
        jxlsave calls libjxl, without its thread pool."""
        key = f"time/{codec}/{size}/{effort}/{quality}/{','.join(self.names)}"
        if key not in self.cache:
            passes = 20 if codec == "jpeg" else 6 if size < 600 else 3
            if codec == "avif":
                passes = 4 if effort >= 8 and size < 600 else 2
            if codec == "jxl":
                passes = 4 if effort <= 4 and size < 600 else 2
            out = run_tool([self.enctime, codec, str(quality), str(effort), str(size), str(passes)]
                           + self.raw[size]).split()
            self.cache[key] = {"ms": float(out[0]), "bytes": float(out[1])}
            self.save_cache()
        return self.cache[key]["ms"], self.cache[key]["bytes"]


def calibrate(curve, target, jumps=()):
    """The quality whose mean distance is `target` on a measured curve of
    (quality, mean distance): linear between the grid points around it, the
    curve first made non-increasing (a higher quality never counts as worse).
    Between the two qualities of a `jumps` pair the codec changes mode (AVIF:
    4:2:0 to 4:4:4), so nothing between them is that mix: a target there gets
    the upper one (never worse than the target). Returns (quality as a float,
    note)."""
    qs = [q for q, _ in curve]
    mono, low = [], float("inf")
    for _, s in curve:
        low = min(low, s)
        mono.append(low)
    if target >= mono[0]:
        return float(qs[0]), "clamped-low"
    if target < mono[-1]:
        return float(qs[-1]), "clamped-high"
    for k in range(len(qs) - 1):
        a, b = mono[k], mono[k + 1]
        if a >= target >= b and a > b:
            if (qs[k], qs[k + 1]) in jumps and target < a:
                return float(qs[k + 1]), "step"
            return qs[k] + (a - target) / (a - b) * (qs[k + 1] - qs[k]), ""
    return float(qs[-1]), "clamped-high"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--photos", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--enctime", required=True, help="the enctime binary (enctime.c)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--crops", type=int, default=24, help="sample size (at most 24; --quick: 6)")
    p.add_argument("--fresh", action="store_true", help="ignore the cache of measured points")
    p.add_argument("--swift-out", help="where the generated Swift goes (default: "
                   "Sources/ArtCacheRender/Rendering/QualityTable.swift)")
    p.add_argument("--bytes-slack", type=float, default=BYTES_SLACK,
                   help="the effort rule: the fastest effort within this factor of the fewest bytes (1.05)")
    args = p.parse_args()
    pyvips.cache_set_max(0)
    started = time.time()
    bench = Bench(args)
    print(f"sample: {len(bench.names)} crops ({', '.join(bench.names)}); cross-check on {len(bench.check)}",
          file=sys.stderr)
    try:
        rows, (chosen, cold) = measure(bench, args.bytes_slack)
    finally:
        bench.close()
    minutes = (time.time() - started) / 60
    out_tsv = os.path.join(args.root, "Benchmarks/quality/table.tsv")
    out_swift = args.swift_out or os.path.join(args.root, "Sources/ArtCacheRender/Rendering/QualityTable.swift")
    if args.quick:
        out_tsv = os.path.join(args.work, "quick-table.tsv")
        out_swift = os.path.join(args.work, "quick-QualityTable.swift")
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "crops": len(bench.names), "check": len(bench.check), "minutes": minutes, "slack": args.bytes_slack,
            "cold_budget": COLD_BUDGET,
            "sizes": SIZES, "jpeg_qs": JPEG_QS, "efforts": EFFORTS, "policy_q": POLICY_Q, "check_qs": CHECK_QS,
            "vips": pyvips.version(0), "vips_minor": pyvips.version(1), "vips_micro": pyvips.version(2)}
    write_tsv(out_tsv, rows, meta)
    write_swift(out_swift, rows, chosen, cold, meta)
    print(f"wrote {out_tsv} and {out_swift} in {minutes:.1f} min", file=sys.stderr)


def measure(bench, slack):
    rows = []   # dicts, one per table.tsv line
    targets = {}
    for size in SIZES:
        for q in JPEG_QS:
            pt = bench.point("jpeg", size, 0, q)
            targets[(size, q)] = pt["ssimulacra"]
            row = {"kind": "jpeg", "codec": "jpeg", "size": size, "effort": 0, "jpeg_q": q, "quality": q,
                   "ssimulacra": pt["ssimulacra"], "bytes": pt["bytes"], "ms": bench.encode_ms("jpeg", size, 0, q)[0]}
            if q in CHECK_QS:
                row["check"] = bench.cross_check("jpeg", size, 0, q)
            rows.append(row)
            print(f"jpeg {size} q{q}: ssimulacra {pt['ssimulacra']:.5f} bytes {pt['bytes']:.0f} "
                  f"ms {row['ms']:.3f}", file=sys.stderr)
    policy = {}   # (codec, size) -> {effort: the calibrated row at POLICY_Q}
    for codec in CODECS:
        for size in SIZES:
            at_policy = {}
            for effort in EFFORTS[codec]:
                curve = []
                for quality in bench.grid[codec]:
                    pt = bench.point(codec, size, effort, quality)
                    curve.append((quality, pt["ssimulacra"]))
                    rows.append({"kind": "grid", "codec": codec, "size": size, "effort": effort,
                                 "quality": quality, "ssimulacra": pt["ssimulacra"], "bytes": pt["bytes"]})
                last = 1
                for q in JPEG_QS:
                    value, note = calibrate(curve, targets[(size, q)], JUMPS[codec])
                    quality = max(last, min(100, max(1, round(value))))   # never lower for a higher q
                    last = quality
                    ms, data_bytes = bench.encode_ms(codec, size, effort, quality)
                    row = {"kind": "calibrated", "codec": codec, "size": size, "effort": effort, "jpeg_q": q,
                           "quality": quality, "exact": value, "ssimulacra": targets[(size, q)],
                           "bytes": data_bytes, "ms": ms, "note": note}
                    if q in CHECK_QS:
                        row["check"] = bench.cross_check(codec, size, effort, quality)
                    rows.append(row)
                    if q == POLICY_Q:
                        at_policy[effort] = row
                    print(f"{codec} {size} effort {effort} jpeg q{q} -> Q{quality} ({value:.1f}{' ' + note if note else ''}) "
                          f"bytes {data_bytes:.0f} ms {ms:.2f}", file=sys.stderr)
            policy[(codec, size)] = at_policy
    chosen = {}
    cold = {}
    for (codec, size), measured in policy.items():
        pickable = PICKABLE.get(codec, lambda effort: True)
        at_policy = {e: r for e, r in measured.items() if pickable(e)}
        # The effort rule: among efforts whose bytes at the q80 match are
        # within 5% of the fewest, the fastest.
        fewest = min(r["bytes"] for r in at_policy.values())
        fits = [e for e, r in at_policy.items() if r["bytes"] <= fewest * slack]
        pick = min(fits, key=lambda e: at_policy[e]["ms"])
        chosen[(codec, size)] = pick
        # The cold effort (an answer waits for it): the fewest bytes among the
        # efforts within the cold budget (COLD_BUDGET x AVIF speed 9's time
        # at this size); the fastest effort when none is.
        budget = policy[(COLD_REFERENCE[0], size)][COLD_REFERENCE[1]]["ms"] * COLD_BUDGET
        affordable = [e for e, r in at_policy.items() if r["ms"] <= budget]
        fast = (min(affordable, key=lambda e: at_policy[e]["bytes"]) if affordable
                else min(at_policy, key=lambda e: at_policy[e]["ms"]))
        cold[(codec, size)] = fast
        for r in rows:
            if r["kind"] == "calibrated" and r["codec"] == codec and r["size"] == size:
                r["chosen"] = ",".join(t for t, e in (("behind", pick), ("cold", fast)) if r["effort"] == e) or "no"
        print(f"{codec} {size}: effort {pick} chosen, {fast} cold (budget {budget:.2f} ms)", file=sys.stderr)
    return rows, (chosen, cold)


if __name__ == "__main__":
    main()
