# The soak's loopback origin, sourced by `run` and `mixed`: `start_origin` generates
# SOURCES 600x600 JPEGs under $WORK/www (once) and starts nginx on 127.0.0.1 (a free
# port, in NGINX_PORT; pid file $WORK/nginx.pid, stopped by the caller's trap).
#   /art/<anything>/<k>.jpg   source k, no expiry: every new path is a new URL for the cache
#   /art/s<anything>/<k>.jpg  the same, but `Cache-Control: max-age=1` (and nginx's ETag /
#                             Last-Modified): expired a second later, so a cache that asks
#                             again revalidates (304).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_origin() {
  if [ ! -f "$WORK/www/src/$((SOURCES - 1)).jpg" ]; then
    log "generating $SOURCES 600x600 JPEG sources (vips perlin colour fields + noise)"
    rm -rf "$WORK/www" "$WORK/gen"; mkdir -p "$WORK/www/src" "$WORK/gen"
    vips gaussnoise "$WORK/gen/n.v" 600 600 --mean 0 --sigma 12
    for k in $(seq 0 $((SOURCES - 1))); do
      for c in 0 1 2; do
        vips perlin "$WORK/gen/p$c.v" 600 600 --cell-size $((32 + (k % 6) * 24)) --seed $((k * 3 + c))
        vips linear "$WORK/gen/p$c.v" "$WORK/gen/l$c.v" 110 128
      done
      vips bandjoin "$WORK/gen/l0.v $WORK/gen/l1.v $WORK/gen/l2.v" "$WORK/gen/rgb.v"
      vips add "$WORK/gen/rgb.v" "$WORK/gen/n.v" "$WORK/gen/sum.v"
      vips cast "$WORK/gen/sum.v" "$WORK/gen/u.v" uchar
      vips copy "$WORK/gen/u.v" "$WORK/www/src/$k.jpg[Q=88,strip]"
    done
    rm -rf "$WORK/gen"
  fi
  chmod -R a+rX "$WORK/www"

  NGINX_PORT=$(free_port)
  log "nginx origin on 127.0.0.1:$NGINX_PORT"
  cat > "$WORK/nginx.conf" <<NGX
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off; sendfile on; keepalive_requests 100000;
  types { image/jpeg jpg; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    # regex locations are tried in order: the short-lived ones first.
    location ~ ^/art/s[A-Za-z0-9]*/([0-9]+)\.jpg\$ { alias $WORK/www/src/\$1.jpg; expires 1s; }
    location ~ ^/art/[A-Za-z0-9]+/([0-9]+)\.jpg\$ { alias $WORK/www/src/\$1.jpg; }
    location / { return 404; }
  }
}
NGX
  rm -f "$WORK/nginx.pid"
  nginx -c "$WORK/nginx.conf"
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/art/x1/0.jpg" && break; sleep 0.1; done
  curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/art/x1/0.jpg" || { echo "nginx origin does not answer" >&2; exit 1; }
}
