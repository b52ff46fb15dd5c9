# Sourced by Benchmarks/compare/run (ONLY="P2d", or a full run), after
# browsers.sh (its sign-auto.py, fetch_accept, upgrades_idle): issue 52 §2.
#
# P2d Save-Data: the held-out photographs (Benchmarks/quality/photos.sh: 72
#     600x600 crops of photographs the quality table never saw, as JPEG Q90)
#     at 100x100 and 300x300 cover, f=auto, each asked with Chrome's Accept
#     and with Accept: image/jpeg, without and with `Save-Data: on`: the
#     bytes of the cold answers, and of the answers after serve's format
#     upgrades have ended. Goal: Save-Data's bytes <= 0.7x the normal
#     answer's for the same Accept, the same formats.
if want P2d; then
log "P2d Save-Data: bytes of the held-out photographs with and without Save-Data: on"
. "$ROOT/Benchmarks/quality/photos.sh"
HELD="$WORK/heldout-crops"
photo_set heldout "$HELD" >&2
rm -rf "$WORK/www/heldout"; mkdir -p "$WORK/www/heldout"
for f in "$HELD"/p*.png; do b=$(basename "$f" .png); vips copy "$f" "$WORK/www/heldout/$b.jpg[Q=90,strip]"; done
chmod -R a+rX "$WORK/www/heldout"
ls "$WORK/www/heldout" | sed "s|^|http://127.0.0.1:$NGINX_PORT/heldout/|" > "$WORK/heldout.txt"
n_held=$(wc -l < "$WORK/heldout.txt")
rm -rf "$WORK/cache-savedata"; start_serve "$WORK/cache-savedata"
for side in 100 300; do
  "$PY" "$WORK/sign-auto.py" "$KEY" "${side}x${side},fit=cover" "http://127.0.0.1:$SERVE_PORT" < "$WORK/heldout.txt" > "$WORK/savedata-$side.txt"
done
declare -A SD_BYTES SD_TYPES
for phase in cold upgraded; do
  [ "$phase" = upgraded ] && upgrades_idle
  for acc in chrome jpeg; do
    a=$CHROME_ACCEPT; [ "$acc" = jpeg ] && a=image/jpeg
    for sd in off on; do
      for side in 100 300; do
        header=""; [ "$sd" = on ] && header="Save-Data: on"
        SD_BYTES[$phase.$acc.$sd.$side]=$(fetch_accept "$WORK/savedata-$side.txt" "$a" "$header" | cut -d' ' -f2)
        SD_TYPES[$phase.$acc.$sd.$side]=$(cat "$WORK/types.txt")
      done
    done
  done
done
stop_serve
for acc in chrome jpeg; do
  cells=""
  for phase in cold upgraded; do
    [ "$acc" = jpeg ] && [ "$phase" = upgraded ] && continue   # a JPEG client gets no upgrade
    for side in 100 300; do
      off=${SD_BYTES[$phase.$acc.off.$side]}; on=${SD_BYTES[$phase.$acc.on.$side]}
      same=$([ "${SD_TYPES[$phase.$acc.off.$side]}" = "${SD_TYPES[$phase.$acc.on.$side]}" ] && echo "same formats" || echo "formats differ: ${SD_TYPES[$phase.$acc.off.$side]%, } / ${SD_TYPES[$phase.$acc.on.$side]%, }")
      cells="$cells $phase ${side} px: $((off / n_held)) → $((on / n_held)) B, **$(ratio "$on" "$off")×** ($same);"
      echo "P2d $acc $phase $side px: $off -> $on B (${SD_TYPES[$phase.$acc.on.$side]%, })" >&2
    done
  done
  label="Chrome's Accept"; [ "$acc" = jpeg ] && label="Accept: image/jpeg"
  row "P2d Save-Data: on, $n_held held-out photographs, f=auto cover, $label (mean bytes per answer)" \
    "${cells# }" "the same requests without Save-Data" "" "" "goal ≤ 0.7× per size, the same formats"
done
fi
