# Sourced by Benchmarks/compare/run (ONLY="anim", or a full run): issue 52 §1.
#
# anim: an animated GIF of 40 frames at 480x480 (a slow pan across one of the
#     held-out photographs, Benchmarks/quality/photos.sh; 80 ms a frame) to a
#     100x100 animated WebP, one core:
#     - artcache's renderer in process (`artcache-bench render-files --format
#       webp`: the service's path, libvips `thumbnail` with n=-1, the frames
#       cropped, `webpsave` at the calibrated quality and method), ms per
#       render (20 renders) and the tool's peak RSS;
#     - `vips thumbnail in.gif[n=-1] out.webp[Q=,effort=] 100` (the libvips
#       CLI, one process per render: its start-up counts), ms per run
#       (median of 9) and peak RSS;
#     - `gif2webp -lossy -q Q -m M` (libwebp's own converter) of the GIF already
#       resized to 100 px by `vips thumbnail`: the encode alone, ms per run
#       (median of 9) and peak RSS.
#     Bytes of each output; every output is checked to be 40 frames.
#     ANIM_CORE: the core they run on (1).
if want anim; then
log "anim: a 40-frame 480x480 GIF to a 100 px animated WebP: artcache vs vips thumbnail vs gif2webp"
. "$ROOT/Benchmarks/quality/photos.sh"
photo_set heldout "$WORK/heldout-crops" >&2
ANIM="$WORK/anim"; rm -rf "$ANIM"; mkdir -p "$ANIM"
"$PY" - "$WORK/heldout-crops/p1.png" "$ANIM/in.gif" <<'PYEOF'
import sys, pyvips
photo = pyvips.Image.new_from_file(sys.argv[1]).colourspace("srgb")   # 600x600
frames = [photo.crop(3 * i, 2 * i, 480, 480) for i in range(40)]     # a slow pan
strip = pyvips.Image.arrayjoin(frames, across=1).copy()
strip.set_type(pyvips.GValue.gint_type, "page-height", 480)
strip.set_type(pyvips.GValue.array_int_type, "delay", [80] * 40)
strip.set_type(pyvips.GValue.gint_type, "loop", 0)
strip.gifsave(sys.argv[2])
PYEOF
# The service's WebP setting at 100 px for q80 (QualityTable: cold tier, WebP).
ANIM_Q=81; ANIM_M=4
frames_of() { "$PY" -c 'import sys, pyvips; print(pyvips.Image.new_from_file(sys.argv[1], n=-1).get("n-pages"))' "$1"; }
# artcache, in process
if [ -x "$BENCH" ]; then
  mkdir -p "$ANIM/a"
  out=$(/usr/bin/time -f "%M" -o "$ANIM/a.rss" taskset -c "${ANIM_CORE:-1}" "$BENCH" render-files "$ANIM/in.gif" --size 100x100 --fit cover \
    --format webp --workers 1 --repeats 20 --out "$ANIM/a" --quiet)
  a_ms=$(echo "$out" | sed -E 's/^([0-9]+) renders in ([0-9.]+) s.*/\2 \1/' | awk '{printf "%.1f", $1 / $2 * 1000}')
  a_file=$(ls "$ANIM"/a/* | head -1); a_bytes=$(stat -c %s "$a_file"); a_frames=$(frames_of "$a_file"); a_rss=$(cat "$ANIM/a.rss")
else
  a_ms="n/a"; a_bytes=0; a_frames=0; a_rss=0
fi
# vips thumbnail, one process per render
tv=()
for _ in $(seq 9); do
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$ANIM/v.rss" taskset -c "${ANIM_CORE:-1}" vips thumbnail "$ANIM/in.gif[n=-1]" "$ANIM/v.webp[Q=$ANIM_Q,effort=$ANIM_M,strip]" 100
  t1=$(date +%s.%N); tv+=("$(echo "($t1 - $t0) * 1000" | bc)")
done
v_ms=$(printf '%s\n' "${tv[@]}" | med); v_bytes=$(stat -c %s "$ANIM/v.webp"); v_frames=$(frames_of "$ANIM/v.webp"); v_rss=$(cat "$ANIM/v.rss")
# gif2webp of the GIF resized first
vips thumbnail "$ANIM/in.gif[n=-1]" "$ANIM/small.gif" 100
tg=()
if command -v gif2webp >/dev/null; then
  for _ in $(seq 9); do
    t0=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$ANIM/g.rss" taskset -c "${ANIM_CORE:-1}" gif2webp -quiet -lossy -q "$ANIM_Q" -m "$ANIM_M" "$ANIM/small.gif" -o "$ANIM/g.webp"
    t1=$(date +%s.%N); tg+=("$(echo "($t1 - $t0) * 1000" | bc)")
  done
  g_ms=$(printf '%s\n' "${tg[@]}" | med); g_bytes=$(stat -c %s "$ANIM/g.webp"); g_frames=$(frames_of "$ANIM/g.webp"); g_rss=$(cat "$ANIM/g.rss")
  g_cell="gif2webp -lossy -q $ANIM_Q -m $ANIM_M (encode only, of the GIF resized by vips) ${g_ms} ms, ${g_bytes} B, $g_frames frames, peak $((g_rss / 1024)) MB"
else
  g_cell="gif2webp not installed (Debian webp)"
fi
echo "anim: artcache $a_ms ms $a_bytes B $a_frames frames; vips $v_ms ms $v_bytes B $v_frames frames; $g_cell" >&2
row "anim: 40-frame 480x480 GIF → 100x100 animated WebP, one core" \
  "${a_ms} ms per render (in process), ${a_bytes} B, $a_frames frames, peak $((a_rss / 1024)) MB" \
  "vips thumbnail (CLI, one process per render) ${v_ms} ms, ${v_bytes} B, $v_frames frames, peak $((v_rss / 1024)) MB" \
  "$g_cell" "" "frames kept: $a_frames / 40"
fi
