#!/usr/bin/env python3
"""Bytes at equal quality (issue 51): the encoder levers and the goal numbers
against thumbor, on the calibration set and on a held-out set of photographs
the table was never fitted on. Run through ./levers (it cuts both sets, installs the
thumbor-equivalent's Pillow and pins this to one core); see README.md.

For each set and size (100/300 px): the targets (our JPEG q80's mean
SSIMULACRA, thumbor's WebP Q80's), then for every lever (an encoder setting)
its curve of mean SSIMULACRA and bytes over a grid of codec qualities, and
the bytes where the curve crosses each target (equal quality), with encode
CPU ms there; then the service's answers as the format policy makes them
(cold, and after the upgrades behind them) against thumbor's, at the default
q and at the q that matches thumbor's SSIMULACRA.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import pyvips

from calibrate import butteraugli, decoded_png, payload, run_tool, save_json, ssimulacra

SIZES = [100, 300]   # --sizes
# (AVIF to 89 and WebP to 95 for 600 px, where JPEG q80's match is AVIF
# ~Q80 and WebP ~Q90: calibrate's table.)
GRID = {"avif": (40, 50, 55, 60, 65, 70, 75, 80, 85, 89), "webp": (65, 70, 75, 80, 85, 90, 95),
        "jxl": (55, 60, 65, 70, 75, 80, 85, 90, 95)}
UPGRADE_GAIN = 0.85   # ImagePipeline.upgradeGain: an upgrade is kept when it is at most 85% of the cold bytes

# name -> (codec, effort, environment for enctime). "avif9" and "webp0" are
# today's cold efforts, "avif6" and "webp4" today's behind ones.
LEVERS = {
    "avif9": ("avif", 9, {}),
    "avif9 trellis": ("avif", 9, {"ENCTIME_TRELLIS": "1"}),
    "avif9 chroma-dq": ("avif", 9, {"ENCTIME_AOM": "enable-chroma-deltaq=1"}),
    "avif9 dq3": ("avif", 9, {"ENCTIME_AOM": "deltaq-mode=3"}),
    "avif9 sharp2": ("avif", 9, {"ENCTIME_AOM": "sharpness=2"}),
    "avif9 psnr": ("avif", 9, {"ENCTIME_TUNE": "psnr"}),
    "avif9 444": ("avif", 9, {"ENCTIME_CHROMA": "444"}),
    "avif9 qm": ("avif", 9, {"ENCTIME_AOM": "enable-qm=1"}),
    "avif9 qm4": ("avif", 9, {"ENCTIME_AOM": "enable-qm=1,qm-min=4"}),
    "avif9 qm0-8": ("avif", 9, {"ENCTIME_AOM": "enable-qm=1,qm-min=0,qm-max=8"}),
    "avif9 cdef0": ("avif", 9, {"ENCTIME_AOM": "enable-cdef=0"}),
    "avif9 txsearch": ("avif", 9, {"ENCTIME_AOM": "enable-tx-size-search=1"}),
    "avif8": ("avif", 8, {}),
    "avif7": ("avif", 7, {}),
    "avif6": ("avif", 6, {}),
    "avif6 psnr": ("avif", 6, {"ENCTIME_TUNE": "psnr"}),
    "avif6 dq1": ("avif", 6, {"ENCTIME_AOM": "deltaq-mode=1"}),
    "avif6 dq3": ("avif", 6, {"ENCTIME_AOM": "deltaq-mode=3"}),
    "avif6 chroma-dq": ("avif", 6, {"ENCTIME_AOM": "enable-chroma-deltaq=1"}),
    "avif6 sharp2": ("avif", 6, {"ENCTIME_AOM": "sharpness=2"}),
    "avif6 aq1": ("avif", 6, {"ENCTIME_AOM": "aq-mode=1"}),
    "avif6 444": ("avif", 6, {"ENCTIME_CHROMA": "444"}),
    "avif5": ("avif", 5, {}),
    "avif4": ("avif", 4, {}),
    "webp0": ("webp", 0, {}),
    "webp2": ("webp", 2, {}),
    "webp4": ("webp", 4, {}),
    "webp6": ("webp", 6, {}),
    "webp4 sharp_yuv": ("webp", 4, {"ENCTIME_WEBP": "sharp_yuv"}),
    "webp4 autofilter": ("webp", 4, {"ENCTIME_WEBP": "autofilter"}),
    "webp6 sharp_yuv": ("webp", 6, {"ENCTIME_WEBP": "sharp_yuv"}),
    # JPEG XL (issue 52): libjxl efforts as libvips jxlsave calls them (one
    # thread). Efforts 1 and 2 make effort 3's pixels in more bytes
    # (calibrate's table), so they are not levers.
    "jxl3": ("jxl", 3, {}),
    "jxl4": ("jxl", 4, {}),
    "jxl5": ("jxl", 5, {}),
    "jxl6": ("jxl", 6, {}),
    "jxl7": ("jxl", 7, {}),
}


def names_of(photos, count):
    """calibrate.py's sample order: the centre-bottom crop of every photo,
    then the left-top one."""
    names = sorted((f for f in os.listdir(photos) if re.fullmatch(r"p\d+\.png", f)), key=lambda f: int(f[1:-4]))
    return [n for pick in (3, 0) for n in names if int(n[1:-4]) % 6 == pick][:count]


class Set:
    def __init__(self, label, photos, count, tmp):
        self.label, self.photos = label, photos
        self.names = names_of(photos, count)
        self.tmp = os.path.join(tmp, label)
        os.makedirs(self.tmp, exist_ok=True)
        self.refs, self.raw = {}, {}
        for size in SIZES:
            for i, name in enumerate(self.names):
                crop = pyvips.Image.new_from_file(os.path.join(photos, name)).colourspace("srgb")
                ref = crop.resize(size / 600, kernel="lanczos3").copy_memory()
                path = os.path.join(self.tmp, f"ref-{size}-{i}.png")
                ref.pngsave(path, compression=1)
                raw = os.path.join(self.tmp, f"ref-{size}-{i}.rgb")
                with open(raw, "wb") as f:
                    f.write(ref.write_to_memory())
                self.refs.setdefault(size, []).append((ref, path))
                self.raw.setdefault(size, []).append(raw)


class Bench:
    def __init__(self, args):
        self.enctime, self.pillow = args.enctime, args.pillow_python
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else args.work
        self.tmp = os.path.join(shm, f"artcache-levers-{os.getpid()}")
        self.cache_path = os.path.join(args.work, "levers.json")
        self.cache = json.load(open(self.cache_path)) if os.path.exists(self.cache_path) else {}
        self.sets = [Set("calibration", args.calibration, args.crops, self.tmp),
                     Set("heldout", args.heldout, args.crops, self.tmp)]

    def save(self):
        save_json(self.cache_path, self.cache)

    def decoded(self, data, i):
        return decoded_png(data, os.path.join(self.tmp, f"dist-{i}.png"))

    def files(self, s, lever, size, quality, indices):
        """The encoded bytes of crops `indices` of set `s`."""
        if lever == "jpeg":
            return [s.refs[size][i][0].jpegsave_buffer(Q=quality, strip=True, optimize_coding=False,
                                                       interlace=False, subsample_mode="auto") for i in indices]
        out = os.path.join(self.tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        if lever == "thumbor":
            # thumbor's pil engine for AUTO_WEBP: Pillow, cover resize with
            # Lanczos (ImageOps.fit), WebP at its QUALITY (80), Pillow's
            # defaults otherwise (method 4), from the same lossless crop.
            run_tool([self.pillow, "-c", THUMBOR_EQUIVALENT, str(size), str(quality), out]
                     + [os.path.join(s.photos, s.names[i]) for i in indices])
            ext = "webp"
        else:
            codec, effort, env = LEVERS[lever]
            subprocess.run([self.enctime, f"{codec}-files", str(quality), str(effort), str(size), out]
                           + [s.raw[size][i] for i in indices], check=True, capture_output=True,
                           env={**os.environ, **env})
            ext = codec
        return [open(os.path.join(out, f"{k}.{ext}"), "rb").read() for k in range(len(indices))]

    def per_crop(self, s, lever, size, quality):
        """[(ssimulacra, bytes)] per crop, cached."""
        keys = [f"{s.label}/{lever}/{size}/{quality}/{n}" for n in s.names]
        missing = [i for i, k in enumerate(keys) if k not in self.cache]
        if missing:
            codec = "webp" if lever == "thumbor" else LEVERS.get(lever, ("jpeg",))[0]
            for i, data in zip(missing, self.files(s, lever, size, quality, missing)):
                self.cache[keys[i]] = [ssimulacra(s.refs[size][i][1], self.decoded(data, i)), payload(codec, data)]
            self.save()
        return [self.cache[k] for k in keys]

    def mean(self, s, lever, size, quality):
        pts = self.per_crop(s, lever, size, quality)
        return sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)

    def butteraugli(self, s, lever, size, quality):
        key = f"butteraugli/{s.label}/{lever}/{size}/{quality}/{len(s.names)}"
        if key not in self.cache:
            vals = []
            for i, data in enumerate(self.files(s, lever, size, quality, range(len(s.names)))):
                vals.append(butteraugli(s.refs[size][i][1], self.decoded(data, i)))
            self.cache[key] = [sum(v[0] for v in vals) / len(vals), sum(v[1] for v in vals) / len(vals)]
            self.save()
        return self.cache[key]

    def ms(self, s, lever, size, quality):
        """CPU ms per encode (enctime, fastest of a few passes; on a shared
        machine this is an upper bound)."""
        key = f"ms/{s.label}/{lever}/{size}/{quality}/{len(s.names)}"
        if key not in self.cache:
            codec, effort, env = LEVERS[lever]
            passes = 3 if effort >= 7 or codec == "webp" else 1
            out = subprocess.run([self.enctime, codec, str(quality), str(effort), str(size), str(passes)]
                                 + s.raw[size], check=True, capture_output=True, text=True,
                                 env={**os.environ, **env}).stdout.split()
            self.cache[key] = float(out[0])
            self.save()
        return self.cache[key]

    def at(self, s, lever, size, target):
        """(quality, bytes) where the lever's mean-SSIMULACRA curve crosses
        `target`: linear between grid points (bytes too); None when the grid
        does not reach it."""
        codec = LEVERS[lever][0]
        curve = [(q, *self.mean(s, lever, size, q)) for q in GRID[codec]]
        for (qa, sa, ba), (qb, sb, bb) in zip(curve, curve[1:]):
            if sa >= target >= sb and sa > sb:
                t = (sa - target) / (sa - sb)
                return qa + t * (qb - qa), ba + t * (bb - ba)
        return None


THUMBOR_EQUIVALENT = r'''
import os, sys
from PIL import Image, ImageOps
size, quality, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for k, f in enumerate(sys.argv[4:]):
    im = ImageOps.fit(Image.open(f).convert("RGB"), (size, size), Image.LANCZOS)
    im.save(os.path.join(out, f"{k}.webp"), "WEBP", quality=quality)
'''


def lever_table(bench, levers, report):
    """Bytes at equal SSIMULACRA per lever, against the first lever of its codec."""
    for s in bench.sets:
        for size in SIZES:
            jpeg = bench.mean(s, "jpeg", size, 80)
            thumbor = bench.mean(s, "thumbor", size, 80)
            report.append(f"\n### {s.label}, {size} px: JPEG q80 {jpeg[0]:.5f} / {jpeg[1]:.0f} B; "
                          f"thumbor WebP Q80 {thumbor[0]:.5f} / {thumbor[1]:.0f} B\n")
            report.append("| lever | Q at JPEG q80 | bytes | vs base | ms | Q at thumbor's | bytes | vs base | vs thumbor |")
            report.append("|---|---|---|---|---|---|---|---|---|")
            base = {}
            for lever in levers:
                codec = LEVERS[lever][0]
                a, b = bench.at(s, lever, size, jpeg[0]), bench.at(s, lever, size, thumbor[0])
                if codec not in base:
                    base[codec] = (a, b)
                ba, bb = base[codec]
                ms = bench.ms(s, lever, size, round(a[0])) if a else float("nan")
                cells = [lever]
                for k, (pt, ref) in enumerate(((a, ba), (b, bb))):
                    if pt is None:
                        cells += ["-", "-", "-"]
                    else:
                        cells += [f"{pt[0]:.1f}", f"{pt[1]:.0f}", f"{pt[1] / ref[1] * 100:.0f}%" if ref else "-"]
                    if k == 0:
                        cells.append(f"{ms:.2f}")
                cells.append(f"{b[1] / thumbor[1]:.2f}x" if b else "-")
                report.append("| " + " | ".join(cells) + " |")
                print(f"{s.label} {size} {lever}: {cells}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calibration", required=True)
    p.add_argument("--heldout", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--enctime", required=True)
    p.add_argument("--pillow-python", required=True, help="a python with Pillow (thumbor's)")
    p.add_argument("--crops", type=int, default=24)
    p.add_argument("--sizes", default="100,300", help="thumbnail sizes, px (calibrate's are 100,300,600)")
    p.add_argument("--levers", default=",".join(LEVERS))
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--table", required=True, help="table.tsv (the qualities the service uses)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    pyvips.cache_set_max(0)
    SIZES[:] = [int(z) for z in args.sizes.split(",")]
    TABLE.update(table_rows(args.table))
    bench = Bench(args)
    report = []
    try:
        if args.levers:
            lever_table(bench, args.levers.split(","), report)
        policy_tables(bench, {k: POLICIES[k] for k in args.policies.split(",") if k}, report)
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    with open(args.out, "w") as f:
        f.write("\n".join(report) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


# The format policy for Chrome's Accept (AVIF, WebP, JPEG), per size class:
# (cold lever, behind lever). "now": the committed table's efforts.
POLICIES = {
    "before": {100: ("avif9", "avif6"), 300: ("avif9", "avif6")},
    "webp-cold-100": {100: ("webp4", "avif6"), 300: ("avif9", "avif6")},
    "after": {100: ("webp4", "avif5"), 300: ("avif9", "avif5")},
}
JPEG_QS = tuple(range(60, 91))


def table_rows(path):
    """{(codec, size, effort): [(jpeg q, codec quality)]} from table.tsv's calibrated rows."""
    rows = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "calibrated":
            rows.setdefault((f[1], int(f[2]), int(f[3])), []).append((int(f[4]), int(f[5])))
    return rows


TABLE = {}


def mapped(bench, lever, size, q):
    """The codec quality the service gives `lever` for JPEG q at `size`: the
    committed table (table.tsv, interpolated as QualityTable.setting does)
    when it has the lever's effort, else where the lever's curve on the
    calibration set crosses our JPEG q's mean SSIMULACRA (calibrate.py's
    method), rounded."""
    codec, effort, env = LEVERS[lever]
    row = TABLE.get((codec, size, effort))
    if row and not env:
        xs, ys = [1] + [x for x, _ in row] + [100], [1] + [y for _, y in row] + [100]
        k = 0
        while k < len(xs) - 2 and q > xs[k + 1]:
            k += 1
        t = (q - xs[k]) / (xs[k + 1] - xs[k])
        return int(round(ys[k] + t * (ys[k + 1] - ys[k])))
    cal = bench.sets[0]
    hit = bench.at(cal, lever, size, bench.mean(cal, "jpeg", size, q)[0])
    grid = GRID[LEVERS[lever][0]]
    return round(hit[0]) if hit else (grid[0] if bench.mean(cal, "jpeg", size, q)[0] > bench.mean(cal, lever, size, grid[0])[0] else grid[-1])


def answers(bench, s, policy, size, q):
    """Per crop (cold, upgraded) as (ssimulacra, bytes): the cold answer, and
    what is kept after the upgrade behind it (ImagePipeline's rule: the
    upgrade when it is at most 85% of the cold bytes)."""
    cold_lever, behind_lever = policy[size]
    cold = bench.per_crop(s, cold_lever, size, mapped(bench, cold_lever, size, q))
    behind = bench.per_crop(s, behind_lever, size, mapped(bench, behind_lever, size, q))
    # The format policy proposes the upgrade only where the table says it
    # saves 15% (its mean bytes at q80 on the calibration set).
    cal = bench.sets[0]
    table = [bench.mean(cal, lever, size, mapped(bench, lever, size, 80))[1] for lever in (cold_lever, behind_lever)]
    if table[1] > table[0] * UPGRADE_GAIN:
        return [(c, c) for c in cold]
    return [(c, b if b[1] <= c[1] * UPGRADE_GAIN else c) for c, b in zip(cold, behind)]


def summary(pairs, k):
    return (sum(p[k][0] for p in pairs) / len(pairs), sum(p[k][1] for p in pairs) / len(pairs),
            sum(1 for p in pairs if p[1] is not p[0]))


def policy_tables(bench, policies, report):
    """The goal numbers (issue 51, 1): per set and size, thumbor's WebP Q80
    against the service's answers at q80 and at the lowest q whose cold
    answers are no worse than thumbor's (mean SSIMULACRA), cold and upgraded."""
    for name, policy in policies.items():
        report.append(f"\n### policy {name}: " + ", ".join(f"{z} px cold {c}, behind {b}" for z, (c, b) in policy.items()) + "\n")
        report.append("| set | size | q | JPEG at q: bytes / ssimulacra | cold Q / behind Q | thumbor bytes / ssimulacra | "
                      "cold bytes / ssimulacra | vs thumbor | upgraded bytes / ssimulacra (kept) | vs thumbor |")
        report.append("|---|---|---|---|---|---|---|---|---|---|")
        for s in bench.sets:
            both = {}
            for size in (z for z in SIZES if z in policy):
                t = bench.mean(s, "thumbor", size, 80)
                # The lowest q whose answers, cold and upgraded, are no worse than thumbor's.
                match = next((q for q in JPEG_QS
                              if max(summary(answers(bench, s, policy, size, q), k)[0] for k in (0, 1)) <= t[0]), 90)
                for label, q in (("default", 80), ("matched", match)):
                    pairs = answers(bench, s, policy, size, q)
                    c, u = summary(pairs, 0), summary(pairs, 1)
                    both.setdefault(label, []).append((t, c, u))
                    j = bench.mean(s, "jpeg", size, q)
                    report.append(f"| {s.label} | {size} | {q} ({label}) | "
                                  f"{j[1]:.0f} / {j[0]:.5f} | "
                                  f"{mapped(bench, policy[size][0], size, q)} / {mapped(bench, policy[size][1], size, q)} | "
                                  f"{t[1]:.0f} / {t[0]:.5f} | {c[1]:.0f} / {c[0]:.5f} | {c[1] / t[1]:.2f}x | "
                                  f"{u[1]:.0f} / {u[0]:.5f} ({u[2]}/{len(pairs)}) | {u[1] / t[1]:.2f}x |")
            for label, rows in both.items():
                tb = sum(r[0][1] for r in rows); cb = sum(r[1][1] for r in rows); ub = sum(r[2][1] for r in rows)
                ts = sum(r[0][0] for r in rows) / 2; cs = sum(r[1][0] for r in rows) / 2; us = sum(r[2][0] for r in rows) / 2
                report.append(f"| {s.label} | both | {label} | | | {tb / 2:.0f} / {ts:.5f} | {cb / 2:.0f} / {cs:.5f} | "
                              f"{cb / tb:.2f}x | {ub / 2:.0f} / {us:.5f} | {ub / tb:.2f}x |")
            print(f"policy {name} {s.label} done", file=sys.stderr)


if __name__ == "__main__":
    main()
