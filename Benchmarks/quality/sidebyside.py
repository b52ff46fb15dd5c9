#!/usr/bin/env python3
"""Encode CPU time side by side (issue 52): every codec and effort at its
JPEG-q80 match (table.tsv's calibrated rows), timed in interleaved rounds on
the same core, the fastest round per setting. calibrate's times come from
separate runs, hours apart; on this machine one core's CPU time per encode
moves by up to 2x with the other core's load, so codecs compared by the
format policy's cold rule are timed here in the same minutes. Run through
./sidebyside (it cuts the photographs and pins this to one core).

Prints a markdown table: per set and size, ms per encode and mean bytes for
each setting, and its ratio to AVIF speed 9's time in the same rounds; then
what the format policy (Sources/ArtCacheServer/Negotiation.swift's
FormatPolicy, with calibrate's effort rules) answers from these numbers:
Chrome's Accept, and Safari 17's with `[service] jxl` cold or behind.
"""
import argparse
import os
import shutil
import subprocess
import sys

import pyvips

from levers import names_of

SIZES = (100, 300, 600)
# (codec, effort) timed: JPEG XL's efforts against the cold and behind
# efforts of WebP and AVIF, and JPEG itself.
SETTINGS = [("jpeg", 0), ("webp", 0), ("webp", 2), ("webp", 4), ("avif", 9), ("avif", 5)] \
    + [("jxl", e) for e in range(1, 8)]
COLD_BUDGET = 1.10     # calibrate.py: a cold effort encodes within 110% of AVIF speed 9's time
BYTES_SLACK = 1.05     # calibrate.py: the behind effort, the fastest within 5% of the fewest bytes
UPGRADE_GAIN = 0.85    # FormatPolicy.upgradeGain
PICKABLE = {"jxl": lambda effort: effort >= 3}   # calibrate.py: libvips jxlsave's efforts


def efforts(best, mean_bytes, codec):
    """(cold effort, behind effort) of `codec` by calibrate's rules, from
    these rounds' times and bytes."""
    mine = [e for c, e in SETTINGS if c == codec and PICKABLE.get(c, lambda _: True)(e)]
    budget = best[("avif", 9)] * COLD_BUDGET
    affordable = [e for e in mine if best[(codec, e)] <= budget]
    cold = (min(affordable, key=lambda e: mean_bytes[(codec, e)]) if affordable
            else min(mine, key=lambda e: best[(codec, e)]))
    fewest = min(mean_bytes[(codec, e)] for e in mine)
    behind = min((e for e in mine if mean_bytes[(codec, e)] <= fewest * BYTES_SLACK), key=lambda e: best[(codec, e)])
    return cold, behind


def choice(best, mean_bytes, cold_formats, behind_formats, slack):
    """FormatPolicy.choice: the cold answer is the cheapest encode among the
    cold formats (JPEG always) within `slack` of the smallest cold bytes; the
    better one the smallest at its behind effort, when it is at most 85% of
    the cold answer's bytes."""
    tiers = {c: efforts(best, mean_bytes, c) for c in cold_formats + behind_formats}
    cold = [("jpeg", 0)] + [(c, tiers[c][0]) for c in cold_formats]
    smallest = min(mean_bytes[k] for k in cold)
    pick = min((k for k in cold if mean_bytes[k] <= smallest * slack), key=lambda k: best[k])
    behind = [(c, tiers[c][1]) for c in cold_formats + behind_formats]
    better = min(behind, key=lambda k: mean_bytes[k])
    if mean_bytes[better] > mean_bytes[pick] * UPGRADE_GAIN:
        better = None
    name = lambda k: f"{k[0]} {k[1]}" if k[0] != "jpeg" else "jpeg"
    return f"{name(pick)} ({mean_bytes[pick]:.0f} B, {best[pick]:.2f} ms)" + (
        f" → {name(better)} ({mean_bytes[better]:.0f} B)" if better else "")


def q80_rows(path):
    """{(codec, size, effort): codec quality at the JPEG q80 match}."""
    rows = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "calibrated" and f[4] == "80":
            rows[(f[1], int(f[2]), int(f[3]))] = int(f[5])
    return rows


def raw_files(photos, names, size, tmp):
    """The crops resized as calibrate resizes them (Lanczos 3), as raw RGB."""
    paths = []
    for i, name in enumerate(names):
        crop = pyvips.Image.new_from_file(os.path.join(photos, name)).colourspace("srgb")
        ref = crop.resize(size / 600, kernel="lanczos3").copy_memory()
        path = os.path.join(tmp, f"{size}-{i}.rgb")
        with open(path, "wb") as f:
            f.write(ref.write_to_memory())
        paths.append(path)
    return paths


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--set", action="append", required=True, help="LABEL=DIR of crops (repeatable)")
    p.add_argument("--enctime", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--crops", type=int, default=24)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sizes", default="100,300,600")
    args = p.parse_args()
    pyvips.cache_set_max(0)
    qualities = q80_rows(args.table)
    tmp = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp", f"artcache-sidebyside-{os.getpid()}")
    os.makedirs(tmp)
    print("| set | size | setting | Q | ms/encode | vs AVIF s9 | bytes |")
    print("|---|---|---|---|---|---|---|")
    decisions = []
    try:
        for spec in args.set:
            label, photos = spec.split("=", 1)
            names = names_of(photos, args.crops)
            for size in (int(z) for z in args.sizes.split(",")):
                raws = raw_files(photos, names, size, tmp)
                best, mean_bytes = {}, {}
                for _ in range(args.rounds):
                    for codec, effort in SETTINGS:
                        quality = 80 if codec == "jpeg" else qualities[(codec, size, effort)]
                        out = subprocess.run([args.enctime, codec, str(quality), str(effort), str(size), "1"] + raws,
                                             check=True, capture_output=True, text=True).stdout.split()
                        key = (codec, effort)
                        best[key] = min(best.get(key, float("inf")), float(out[0]))
                        mean_bytes[key] = float(out[1])
                base = best[("avif", 9)]
                for codec, effort in SETTINGS:
                    quality = 80 if codec == "jpeg" else qualities[(codec, size, effort)]
                    print(f"| {label} | {size} | {codec} {effort} | {quality} | {best[(codec, effort)]:.2f} | "
                          f"{best[(codec, effort)] / base:.2f}x | {mean_bytes[(codec, effort)]:.0f} |", flush=True)
                for slack in (1.05, 1.10):
                    decisions.append(f"| {label} | {size} | {round((slack - 1) * 100)}% | "
                                     + " | ".join(choice(best, mean_bytes, cold, behind, slack) for cold, behind in
                                                  ((["webp", "avif"], []), (["webp", "avif", "jxl"], []),
                                                   (["webp", "avif"], ["jxl"]))) + " |")
                print(f"{label} {size} done", file=sys.stderr)
        print("\n| set | size | cold slack | Chrome | Safari 17, jxl = cold | Safari 17, jxl = behind |")
        print("|---|---|---|---|---|---|")
        print("\n".join(decisions))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
