# Sourced by Benchmarks/compare/run (ONLY="P2b P4b", or a full run): the rows
# of issue 35, "browsers first", measured as a browser asks. Uses run's
# helpers (make_photos, start_serve, stop_serve, row, ratio, best, most,
# med, span) and
# its loopback nginx origin.
#
# P2b cold: $N_E2E real photographs (600x600), each at 100x100 and 300x300
#     cover, with Chrome's Accept, 16 keep-alive transfers at once (one curl):
#     artcache serve (f=auto, the format policy) vs thumbor --processes <cores>
#     with AUTO_WEBP = True and QUALITY = 80. Wall time, bytes, and the mean
#     ssimulacra (lower is better) of a sample against a Lanczos-3 reference.
#     artcache runs at its default quality and at q=$EQ_Q (thumbor's quality).
#     3 x ROUNDS pairs per quality, thumbor and artcache in turn, the order
#     rotating; the row gives the medians and each pair's ratio's median and range.
# P2c after upgrades: the same requests again once serve's format_upgrade
#     jobs are idle: bytes (and time).
# P4b warm: one hot set of f=auto thumbnails, wrk -c16 with Chrome's Accept
#     vs the same with Accept: image/jpeg (each warmed first), and nginx
#     proxy_cache keyed by the format class (docs/formats.md, "Behind a front cache") in
#     front of the same serve, with Chrome's Accept; all three up at once,
#     measured in 3 x ROUNDS pairs of 4 s runs in turn, each ratio taken
#     within its pair (the median and the range of the pairs are reported).
# CHROME_ACCEPT: set by run.
source "$(dirname "${BASH_SOURCE[0]}")/helpers.sh"   # upgrades_idle, wrk_accept_lua

# The e2e photographs (as P2 makes them, if P2 did not run).
browsers_photos() {
  make_photos
  # Made again when the list or its files are missing (a run of the other
  # size regenerates the corpus, and with it www/).
  if [ ! -f "$WORK/e2e-photos.txt" ] || [ ! -f "$WORK/www/e2e/$((N_E2E - 1)).jpg" ]; then
    mapfile -t PHOTOS < <(ls "$WORK"/photos/p*.jpg)
    rm -rf "$WORK/www/e2e"; mkdir -p "$WORK/www/e2e"
    for i in $(seq 0 $((N_E2E - 1))); do
      { cat "${PHOTOS[$((i % ${#PHOTOS[@]}))]}"; head -c 16 /dev/urandom; } > "$WORK/www/e2e/$i.jpg"
    done
    chmod -R a+rX "$WORK/www"
    seq 0 $((N_E2E - 1)) | sed "s|.*|http://127.0.0.1:$NGINX_PORT/e2e/&.jpg|" > "$WORK/e2e-photos.txt"
  fi
}


# Signed f=auto paths: OPTIONS PREFIX < urls
cat > "$WORK/sign-auto.py" <<'PYEOF'
import base64, hmac, hashlib, sys
key = bytes.fromhex(sys.argv[1]); options = sys.argv[2]; base = sys.argv[3]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
for url in sys.stdin.read().split():
    rest = "/" + options + "/" + b64(url.encode())
    print(base + "/" + b64(hmac.new(key, rest.encode(), hashlib.sha256).digest()) + rest)
PYEOF

# fetch_accept LIST ACCEPT [HEADER] -> prints "SECONDS BYTES"; content types counted in $WORK/types.txt.
# HEADER ("Save-Data: on"): one more request header, sent once per request.
fetch_accept() {
  local t0 t1 extra=()
  [ -n "${3:-}" ] && extra=(-H "$3")   # on the command line: a config file's headers add up per URL
  awk '{print "url = \"" $0 "\"\noutput = \"/dev/null\""}' "$1" > "$WORK/urls.cfg"
  t0=$(date +%s.%N)
  curl -s -Z --parallel-max 16 -H "Accept: $2" "${extra[@]}" -K "$WORK/urls.cfg" \
    -w '%{http_code} %{time_total} %{size_download} %{content_type}\n' > "$WORK/lat.raw" 2>/dev/null
  t1=$(date +%s.%N)
  local bad; bad=$(grep -vc '^200 ' "$WORK/lat.raw" || true)
  [ "$bad" = 0 ] || echo "non-200 answers: $(cut -d' ' -f1 "$WORK/lat.raw" | sort | uniq -c | tr '\n' ' ')" >&2
  awk '{print $4}' "$WORK/lat.raw" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}' > "$WORK/types.txt"
  awk '{printf "%.1f\n", $2 * 1000}' "$WORK/lat.raw" | sort -n > "$WORK/lat.txt"
  echo "$(echo "$t1 - $t0" | bc) $(awk '{b += $3} END {print b}' "$WORK/lat.raw")"
}

if want P2b; then
log "P2b/P2c browsers: Chrome's Accept, $N_E2E photographs at 100 and 300 px cover, 16 at once: artcache (f=auto) vs thumbor AUTO_WEBP"
browsers_photos
: > "$WORK/browser-urls.txt"
for s in 100 300; do sed "s|^|$s |" "$WORK/e2e-photos.txt" >> "$WORK/browser-urls.txt"; done
HAVE_THUMBOR_WEBP=0
TW_PORT=$((THUMBOR_PORT + 1))
if [ -x "$WORK/venv/bin/thumbor" ]; then
  HAVE_THUMBOR_WEBP=1
  cat > "$WORK/thumbor-webp.conf" <<TC
ALLOW_UNSAFE_URL = True
LOADER = 'thumbor.loaders.http_loader'
RESULT_STORAGE = None
STORAGE = 'thumbor.storages.no_storage'
QUALITY = 80
AUTO_WEBP = True
TC
  "$WORK/venv/bin/thumbor" -p $TW_PORT -i 127.0.0.1 -c "$WORK/thumbor-webp.conf" -l error --processes "$(nproc)" > "$WORK/thumbor-webp.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$TW_PORT/healthcheck" && break; sleep 0.2; done
  awk -v p="$TW_PORT" '{print "http://127.0.0.1:" p "/unsafe/" $1 "x" $1 "/" $2}' "$WORK/browser-urls.txt" > "$WORK/thumbor-webp.txt"
fi
# artcache twice: at its default quality (JPEG-scale q80: higher quality than
# thumbor's WebP Q80) and at EQ_Q, a JPEG-scale quality at about thumbor's
# WebP Q80 (over the 100 quick-run photographs at 300 px: thumbor 0.0199,
# artcache q=72 0.0192, q=74 0.0188; in Benchmarks/quality/table.tsv JPEG q70
# is 0.0196): bytes compared at the same quality bound; the row says both.
EQ_Q=${EQ_Q:-72}
QSETS=("" ",q=$EQ_Q")
declare -A TA BA BC TC LA TYPES_A TYPES_C UPGS RT
tt=(); bt=""; lt=""; types_t=""
# thumbor_round: one cold round of thumbor's list; its time is appended to tt
# and left in LAST_T (called directly, not in $(...): the arrays are globals).
thumbor_round() {
  local t b
  read -r t b < <(fetch_accept "$WORK/thumbor-webp.txt" "$CHROME_ACCEPT"); tt+=("$t"); bt=$b
  lt="p50 $(pct 50) ms, p99 $(pct 99) ms"; types_t=$(cat "$WORK/types.txt")
  LAST_T=$t
}
# artcache_round QI LAST: a fresh serve, one cold round (its time appended to
# TA[QI]), then its format upgrades let run to the end (so nothing of it runs
# behind the next measurement), the same requests again (P2c); on the last
# pair also every 300 px answer kept for the quality mean.
artcache_round() {
  local qi=$1 last=$2 t t2 b
  rm -rf "$WORK/cache-browsers"; start_serve "$WORK/cache-browsers"
  : > "$WORK/artcache-browsers.txt"
  for s in 100 300; do
    "$PY" "$WORK/sign-auto.py" "$KEY" "${s}x${s},fit=cover${QSETS[$qi]}" "http://127.0.0.1:$SERVE_PORT" < "$WORK/e2e-photos.txt" \
      >> "$WORK/artcache-browsers.txt"
  done
  read -r t b < <(fetch_accept "$WORK/artcache-browsers.txt" "$CHROME_ACCEPT"); TA[$qi]="${TA[$qi]:-} $t"; BA[$qi]=$b
  LA[$qi]="p50 $(pct 50) ms, p99 $(pct 99) ms"; TYPES_A[$qi]=$(cat "$WORK/types.txt")
  upgrades_idle
  read -r t2 b < <(fetch_accept "$WORK/artcache-browsers.txt" "$CHROME_ACCEPT"); TC[$qi]="$t2"; BC[$qi]=$b; TYPES_C[$qi]=$(cat "$WORK/types.txt")
  UPGS[$qi]=$(curl -s "http://127.0.0.1:$SERVE_PORT/metrics" | sed -n 's/^artcache_format_upgrades_total{outcome="\([a-z_]*\)"} \([0-9]*\).*/\1 \2, /p' | tr -d '\n')
  if [ "$last" = 1 ]; then
    # Quality: every photograph at 300 px (the 300 px half of the list; a 20-image sample moved the mean by ~0.0006).
    mkdir -p "$WORK/q-artcache$qi"; rm -f "$WORK"/q-artcache$qi/*
    tail -n "$N_E2E" "$WORK/artcache-browsers.txt" | awk '{print NR - 1, $0}' | while read -r i u; do
      curl -s -H "Accept: $CHROME_ACCEPT" -o "$WORK/q-artcache$qi/$i" "$u"; done
  fi
  stop_serve
  LAST_T=$t
}
# Pairs: 3 x ROUNDS per quality, thumbor and artcache in turn, the order
# rotating; each ratio is taken within its pair (this VM's speed drifts by
# 20% from one minute to the next: a best-of over separate windows let the
# drift decide the ratio, 1.2x to 1.6x on the same binaries).
PAIRS_B=$((ROUNDS * 3))
for i in $(seq $PAIRS_B); do
  for qi in 0 1; do
    last=$([ "$i" = "$PAIRS_B" ] && echo 1 || echo 0)
    th=""
    if [ $HAVE_THUMBOR_WEBP = 1 ] && [ $(((i + qi) % 2)) = 0 ]; then
      thumbor_round; th=$LAST_T; artcache_round $qi $last; ta=$LAST_T
    else
      artcache_round $qi $last; ta=$LAST_T
      if [ $HAVE_THUMBOR_WEBP = 1 ]; then thumbor_round; th=$LAST_T; fi
    fi
    [ -n "$th" ] && RT[$qi]="${RT[$qi]:-} $(ratio "$th" "$ta")"
    echo "P2b pair $i, quality set $qi: artcache $ta s, thumbor ${th:-n/a} s" >&2
  done
done
if [ $HAVE_THUMBOR_WEBP = 1 ]; then
  mkdir -p "$WORK/q-thumbor"; rm -f "$WORK"/q-thumbor/*
  tail -n "$N_E2E" "$WORK/thumbor-webp.txt" | awk '{print NR - 1, $0}' | while read -r i u; do
    curl -s -H "Accept: $CHROME_ACCEPT" -o "$WORK/q-thumbor/$i" "$u"; done
fi
# Mean ssimulacra of each sample against libvips' Lanczos-3 300x300 centre crop of the source.
cat > "$WORK/ssim.py" <<'PYEOF'
import os, subprocess, sys, pyvips
work, folder, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
scores = []
for i in range(n):
    out = os.path.join(folder, str(i))
    if not os.path.exists(out): continue
    src = os.path.join(work, "www/e2e/%d.jpg" % i)
    ref = pyvips.Image.thumbnail(src, 300, height=300, crop="centre")   # libvips' reduce: Lanczos-3
    ref.write_to_file(out + ".ref.png")
    pyvips.Image.new_from_file(out).colourspace("srgb").extract_band(0, n=3).write_to_file(out + ".png")
    r = subprocess.run(["ssimulacra_main", out + ".ref.png", out + ".png"], capture_output=True, text=True)
    scores.append(float(r.stdout.split()[-1]))
print("%.4f" % (sum(scores) / len(scores)) if scores else "n/a")
PYEOF
command -v ssimulacra_main >/dev/null || { sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo; \
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libjxl-devtools >/dev/null 2>&1 || true; }
QT=$([ $HAVE_THUMBOR_WEBP = 1 ] && "$PY" "$WORK/ssim.py" "$WORK" "$WORK/q-thumbor" "$N_E2E" 2>/dev/null || echo n/a)
T=$( [ ${#tt[@]} -gt 0 ] && printf '%s\n' "${tt[@]}" | med || echo "")
N2=$((2 * N_E2E))
for qi in 0 1; do
  QA=$("$PY" "$WORK/ssim.py" "$WORK" "$WORK/q-artcache$qi" "$N_E2E" 2>/dev/null || echo n/a)
  A=$(printf '%s\n' ${TA[$qi]} | med); ba=${BA[$qi]}; bc=${BC[$qi]}
  R=$([ -n "${RT[$qi]:-}" ] && printf '%s\n' ${RT[$qi]} | med || echo ""); RS=$([ -n "${RT[$qi]:-}" ] && printf '%s\n' ${RT[$qi]} | span || echo "")
  label=$([ $qi = 0 ] && echo "default quality (q80, JPEG scale)" || echo "q=$EQ_Q (JPEG scale), thumbor's quality")
  row "P2b cold, Chrome's Accept, artcache at $label: $N2 thumbnails (100 + 300 px cover) of $N_E2E photographs, 16 at once; medians of $PAIRS_B pairs" \
    "artcache serve ${A} s; ${LA[$qi]}; $((ba / 1000)) KB (${TYPES_A[$qi]%, }); ssimulacra $QA" \
    "$([ -n "$T" ] && echo "thumbor --processes $(nproc) AUTO_WEBP ${T} s; $lt; $((bt / 1000)) KB (${types_t%, }); ssimulacra $QT" || echo "thumbor not installable here")" "" "" \
    "$([ -n "$T" ] && echo "$(LC_ALL=C printf '%.2f' "$R")× thumbor's speed (pairs $RS; goal ≥ 1.5×); bytes $(ratio "$ba" "$bt")× (goal ≤ 1.0, at ssimulacra ≤ thumbor's)" || echo n/a)"
  row "P2c the same requests after upgrades (background idle), artcache at $label" \
    "artcache serve ${TC[$qi]} s; $((bc / 1000)) KB (${TYPES_C[$qi]%, }); upgrades: ${UPGS[$qi]%, }" \
    "$([ -n "$T" ] && echo "thumbor $((bt / 1000)) KB" || echo n/a)" "" "" \
    "$([ -n "$T" ] && echo "bytes $(ratio "$bc" "$bt")× thumbor's (goal ≤ 0.75 at the same quality bound)" || echo n/a)"
done
fi

if want P4b; then
log "P4b warm with Chrome's Accept: f=auto hot set, wrk -t2 -c16, paired: Chrome's Accept vs Accept: image/jpeg vs nginx proxy_cache by format class"
browsers_photos
N_HOT=100
PAIRS=$((ROUNDS * 3))
rm -rf "$WORK/cache-hotb"; start_serve "$WORK/cache-hotb"
head -$N_HOT "$WORK/e2e-photos.txt" | "$PY" "$WORK/sign-auto.py" "$KEY" "100x100,fit=cover" "" > "$WORK/hotb-paths.txt"
wrk_accept_lua "$WORK/hotb-paths.txt" "$CHROME_ACCEPT" "$WORK/wrk-chrome.lua"
wrk_accept_lua "$WORK/hotb-paths.txt" "image/jpeg" "$WORK/wrk-jpeg.lua"
PCB_PORT=$((NGINX_PORT + 3))
for a in "$CHROME_ACCEPT" image/jpeg; do   # warm both formats (and let upgrades end)
  sed "s|^|http://127.0.0.1:$SERVE_PORT|" "$WORK/hotb-paths.txt" > "$WORK/hotb-urls.txt"
  fetch_accept "$WORK/hotb-urls.txt" "$a" > /dev/null
done
upgrades_idle
rm -rf "$WORK/nginx-pcb-cache"
cat > "$WORK/nginx-pcb.conf" <<NGX
worker_processes 2;
pid $WORK/nginx-pcb.pid;
error_log $WORK/nginx-pcb-error.log;
events { worker_connections 1024; }
http {
  access_log off; sendfile on; keepalive_requests 100000;
  map \$http_accept \$artcache_accept_class { ~*image/avif avif; ~*image/webp webp; default other; }
  map \$artcache_accept_class \$artcache_accept { avif "image/avif,image/webp,*/*"; webp "image/webp,*/*"; default "*/*"; }
  proxy_cache_path $WORK/nginx-pcb-cache levels=1:2 keys_zone=thumbsb:10m max_size=1g;
  server {
    listen 127.0.0.1:$PCB_PORT;
    location / {
      proxy_pass http://127.0.0.1:$SERVE_PORT; proxy_set_header Accept \$artcache_accept;
      proxy_cache thumbsb; proxy_cache_key "\$request_uri|\$artcache_accept_class"; proxy_ignore_headers Vary;
      proxy_cache_valid 200 1h;
    }
  }
}
NGX
nginx -c "$WORK/nginx-pcb.conf"
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PCB_PORT/" && break; sleep 0.1; done
# Both up at once (nginx's hits never reach serve), each warmed, then
# $PAIRS pairs of 4 s runs in turn, the order rotating; a pair's ratio is
# taken within the pair, so a drift of this VM's speed cancels out.
rm -f "$WORK/p4b-non2xx"
wrk_rate() {  # wrk_rate LUA PORT OUT -> req/s (a run with any answer not 2xx spoils the row)
  wrk -t2 -c16 -d4s --latency -s "$1" "http://127.0.0.1:$2" > "$3"
  grep -q "Non-2xx" "$3" && { echo "non-2xx in $3: $(grep Non-2xx "$3")" >&2; touch "$WORK/p4b-non2xx"; }
  awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$3"
}
wrk -t2 -c16 -d3s -s "$WORK/wrk-chrome.lua" "http://127.0.0.1:$SERVE_PORT" > /dev/null
wrk -t2 -c16 -d3s -s "$WORK/wrk-jpeg.lua" "http://127.0.0.1:$SERVE_PORT" > /dev/null
wrk -t2 -c16 -d3s -s "$WORK/wrk-chrome.lua" "http://127.0.0.1:$PCB_PORT" > /dev/null
wc_=(); wj=(); wpc=(); rpc=(); rj=()
for i in $(seq $PAIRS); do
  case $((i % 3)) in
    1) c=$(wrk_rate "$WORK/wrk-chrome.lua" $SERVE_PORT "$WORK/wrk-c.out"); pc=$(wrk_rate "$WORK/wrk-chrome.lua" $PCB_PORT "$WORK/wrk-pc.out")
       j=$(wrk_rate "$WORK/wrk-jpeg.lua" $SERVE_PORT "$WORK/wrk-j.out") ;;
    2) pc=$(wrk_rate "$WORK/wrk-chrome.lua" $PCB_PORT "$WORK/wrk-pc.out"); j=$(wrk_rate "$WORK/wrk-jpeg.lua" $SERVE_PORT "$WORK/wrk-j.out")
       c=$(wrk_rate "$WORK/wrk-chrome.lua" $SERVE_PORT "$WORK/wrk-c.out") ;;
    0) j=$(wrk_rate "$WORK/wrk-jpeg.lua" $SERVE_PORT "$WORK/wrk-j.out"); c=$(wrk_rate "$WORK/wrk-chrome.lua" $SERVE_PORT "$WORK/wrk-c.out")
       pc=$(wrk_rate "$WORK/wrk-chrome.lua" $PCB_PORT "$WORK/wrk-pc.out") ;;
  esac
  wc_+=("$c"); wj+=("$j"); wpc+=("$pc"); rpc+=("$(ratio "$c" "$pc")"); rj+=("$(ratio "$c" "$j")")
  echo "P4b pair $i: Chrome $c, JPEG $j, proxy_cache $pc req/s" >&2
done
kill "$(cat "$WORK/nginx-pcb.pid")" 2>/dev/null || true
stop_serve
latb() { awk '$1 == "50%" {p50=$2} $1 == "99%" {p99=$2} END {print "p50 " p50 ", p99 " p99}' "$1"; }
C=$(printf '%s\n' "${wc_[@]}" | med); J=$(printf '%s\n' "${wj[@]}" | med); PC=$(printf '%s\n' "${wpc[@]}" | med)
C=$(LC_ALL=C printf "%.0f" "$C"); J=$(LC_ALL=C printf "%.0f" "$J"); PC=$(LC_ALL=C printf "%.0f" "$PC")
RPC=$(printf '%s\n' "${rpc[@]}" | med); RJ=$(printf '%s\n' "${rj[@]}" | med)
SPOILED=""; [ -f "$WORK/p4b-non2xx" ] && SPOILED="NOT VALID: answers other than 2xx (see the log); "
row "P4b warm f=auto hot set ($N_HOT thumbnails), wrk -c16, Chrome's Accept; median of $PAIRS pairs" \
  "artcache serve $C req/s; $(latb "$WORK/wrk-c.out")" \
  "the same with Accept: image/jpeg $J req/s; $(latb "$WORK/wrk-j.out")" \
  "nginx proxy_cache by format class $PC req/s; $(latb "$WORK/wrk-pc.out")" "" \
  "$SPOILED$(LC_ALL=C printf '%.2f' "$RJ")× the JPEG client (pairs $(printf '%s\n' "${rj[@]}" | span); goal ≥ 0.95); $(LC_ALL=C printf '%.2f' "$RPC")× proxy_cache (pairs $(printf '%s\n' "${rpc[@]}" | span); goal ≥ 1.0)"
rm -rf "$WORK/cache-hotb"
fi
