#!/bin/sh
# How long a job launched without MPI takes to set up, at each rank count given (default 8 16 32
# 64): REPS runs (default 3) of gcoll_setup_bench as plain processes on this machine, every line
# printed, then the median of each column. "boot" is the bootstrap's span, from the last rank's
# start to the last rank's place in the bootstrap (from gcoll_init's "ready" log line); "host" the
# median rank's time on its own host (topology, kernels, transport probes). The caller's GCOLL_*
# variables reach every rank.   sh bench/setup_time.sh [N...]
set -u
BINDIR=${BINDIR:-build/default/bin}
REPS=${REPS:-3}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/gcoll-setup.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
[ $# -gt 0 ] || set -- 8 16 32 64
GCOLL_TIMEOUT=${GCOLL_TIMEOUT:-60}
export GCOLL_TIMEOUT GCOLL_LOG_LEVEL=info
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
for n in "$@"; do
    : > "$OUT/lines"
    rep=0
    while [ $rep -lt "$REPS" ]; do
        port=$(free_port)
        r=0
        while [ $r -lt "$n" ]; do
            GCOLL_RANK=$r GCOLL_SIZE=$n GCOLL_ROOT_ADDR=127.0.0.1:$port timeout 300 "$BINDIR/gcoll_setup_bench" \
                > "$OUT/$r.out" 2>&1 &
            r=$((r + 1))
        done
        wait
        setup=$(grep -h '^SETUP' "$OUT/0.out") || {
            echo "setup_time: the run at $n ranks failed:" >&2
            cat "$OUT"/*.out | grep -v INFO | sort | uniq -c | head -n 10 >&2
            exit 1
        }
        # each rank's start, and its bootstrap and host phases from the "ready" line
        phases=$(cat "$OUT"/*.out | awk '
            /^START/ { split($2, a, "="); split($3, b, "="); start[a[2]] = b[2] }
            / ready: / { match($0, /^\[[^:]*:[0-9]+\]/); id = substr($0, RSTART, RLENGTH); sub(/.*:/, "", id); sub(/\]/, "", id)
                         match($0, /bootstrap [0-9.]+/); boot[id] = substr($0, RSTART + 10, RLENGTH - 10)
                         match($0, /kernels [0-9.]+/); host[id] = substr($0, RSTART + 8, RLENGTH - 8) }
            END { ls = 0; le = 0; m = 0
                  for (r in start) { if (start[r] > ls) ls = start[r]; e = start[r] + boot[r]; if (e > le) le = e; h[++m] = host[r] }
                  for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (h[y] < h[x]) { t = h[x]; h[x] = h[y]; h[y] = t }
                  printf "boot=%.4f host=%.4f", le - ls, h[int((m + 1) / 2)] }')
        echo "$setup $phases" | tee -a "$OUT/lines"
        rep=$((rep + 1))
    done
    # the median of every "key=value" column
    awk '{for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1], NR] = kv[2]; k[i] = kv[1] } }
         END { printf "median np=%d runs=%d:", '"$n"', NR;
               for (i = 3; i in k; i++) { for (r = 1; r <= NR; r++) a[r] = v[k[i], r];
                   for (x = 1; x <= NR; x++) for (y = x + 1; y <= NR; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
                   printf " %s=%s", k[i], a[int((NR + 1) / 2)] } print "" }' "$OUT/lines"
done
