# Helpers of the rows that ask a serve as a browser does: sourced by
# browsers.sh (itself sourced by run) and by p2ab.

# upgrades_idle: waits (at most 300 s) until the serve on $SERVE_PORT has no
# format_upgrade job queued or running.
upgrades_idle() {
  for _ in $(seq 3000); do
    n=$(curl -s "http://127.0.0.1:$SERVE_PORT/metrics" | awk '/^artcache_background_jobs\{/ && /format_upgrade/ {s += $2} END {print s + 0}')
    [ "$n" = 0 ] && return 0
    sleep 0.1
  done
  echo "format upgrades still running after 300 s" >&2
}

# wrk_accept_lua PATHS ACCEPT OUT: a wrk script to OUT, round-robin over the
# paths in PATHS, each request with that Accept.
wrk_accept_lua() {
  { echo 'local paths = {}'; echo 'local i = 0'
    while read -r p; do echo "paths[#paths + 1] = \"$p\""; done < "$1"
    echo "local headers = { [\"Accept\"] = \"$2\" }"
    echo 'request = function() i = i % #paths + 1; return wrk.format("GET", paths[i], headers) end'; } > "$3"
}
