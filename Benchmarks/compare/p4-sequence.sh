# shellcheck shell=bash
# P4's second row (issue 51 §3): the same hot set answered right after the
# work a busy service has just done, as one machine met it — serve started on
# an empty cache; the e2e photographs cold through it as Chrome asks (100 and
# 300 px, f=auto, 16 at once: every answer leaves a format upgrade behind it);
# the same photographs cold through an nginx image_filter + proxy_cache chain
# on the same machine; the hot URLs once each by a plain curl without Accept;
# then wrk on the hot set with Accept: image/jpeg, and nginx proxy_cache
# caching the same thumbnails from this serve, in the same state.
# Sourced by run (its functions and variables); sets P4S_A and P4S_P (req/s).
p4_sequence() {
  local chain="$WORK/nginx-chain.conf" port_if=$((NGINX_PORT + 3)) port_ic=$((NGINX_PORT + 4)) pc=$((NGINX_PORT + 2))
  cat > "$chain" <<NGX
load_module /usr/lib/nginx/modules/ngx_http_image_filter_module.so;
worker_processes 2;
pid $WORK/nginx-chain.pid;
error_log $WORK/nginx-chain-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  proxy_cache_path $WORK/nginx-chain-cache levels=1:2 keys_zone=chain:10m max_size=1g;
  server { listen 127.0.0.1:$port_if;
    location / { proxy_pass http://127.0.0.1:$NGINX_PORT; image_filter crop 100 100; image_filter_jpeg_quality 80; image_filter_buffer 20M; } }
  server { listen 127.0.0.1:$port_ic;
    location / { proxy_pass http://127.0.0.1:$port_if; proxy_cache chain; proxy_cache_valid 200 1h; } }
}
NGX
  local sa=() sp=() r
  for r in $(seq "$ROUNDS"); do
    rm -rf "$WORK/cache-seq" "$WORK/nginx-chain-cache"
    start_serve "$WORK/cache-seq"
    for size in 100 300; do
      "$PY" "$WORK/sign-auto.py" "$KEY" "${size}x${size},fit=cover" "http://127.0.0.1:$SERVE_PORT" < "$WORK/e2e-photos.txt"
    done | awk -v a="$CHROME_ACCEPT" '{print "url = \"" $0 "\"\noutput = \"/dev/null\"\nheader = \"Accept: " a "\""}' > "$WORK/seq-cold.cfg"
    curl -s -Z --parallel-max 16 -K "$WORK/seq-cold.cfg" -w '%{http_code}\n' | grep -vc '^200' | grep -qx 0 \
      || echo "P4 sequence: cold answers that were not 200" >&2
    nginx -c "$chain"
    sed "s|:$NGINX_PORT/|:$port_ic/|" "$WORK/e2e-photos.txt" | awk '{print "url = \"" $0 "\"\noutput = \"/dev/null\""}' > "$WORK/seq-if.cfg"
    curl -s -Z --parallel-max 16 -K "$WORK/seq-if.cfg" > /dev/null
    while read -r path; do curl -s -o /dev/null "http://127.0.0.1:$SERVE_PORT$path"; done < "$WORK/hot-paths.txt"
    wrk -t2 -c16 -d3s -s "$WORK/wrk-seq.lua" "http://127.0.0.1:$SERVE_PORT" > /dev/null
    wrk -t2 -c16 -d10s -s "$WORK/wrk-seq.lua" "http://127.0.0.1:$SERVE_PORT" > "$WORK/wrk-sa.out"
    sa+=("$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$WORK/wrk-sa.out")")
    grep -q "Non-2xx" "$WORK/wrk-sa.out" && echo "P4 sequence non-2xx: $(grep Non-2xx "$WORK/wrk-sa.out")" >&2
    rm -rf "$WORK/nginx-pc-cache"
    sed "s|proxy_pass http://127.0.0.1:[0-9]*;|proxy_pass http://127.0.0.1:$SERVE_PORT;|" "$WORK/nginx-pc.conf" > "$WORK/nginx-pcs.conf"
    nginx -c "$WORK/nginx-pcs.conf"
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$pc/" && break; sleep 0.1; done
    wrk -t2 -c16 -d3s -s "$WORK/wrk-seq.lua" "http://127.0.0.1:$pc" > /dev/null
    wrk -t2 -c16 -d10s -s "$WORK/wrk-seq.lua" "http://127.0.0.1:$pc" > "$WORK/wrk-sp.out"
    sp+=("$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$WORK/wrk-sp.out")")
    kill "$(cat "$WORK/nginx-pc.pid")" "$(cat "$WORK/nginx-chain.pid")" 2>/dev/null || true
    stop_serve
  done
  P4S_A=$(printf '%s\n' "${sa[@]}" | most); P4S_P=$(printf '%s\n' "${sp[@]}" | most)
  rm -rf "$WORK/cache-seq" "$WORK/nginx-chain-cache"
}
