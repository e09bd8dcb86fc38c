#!/bin/bash
# A test cluster of several "hosts" on one machine: a network namespace per host (own hostname),
# veths to a bridge in a namespace of its own, optional tbf shaping of every link. Runs one mpirun
# of a program over it, or a command with helpers to do so; tears everything down on exit, INT and
# TERM. Exit: the program's, or 77 with "SKIP cluster: REASON" where it cannot be made. Usage: -h.
set -u

hosts=2 rph=1 rate="" burst="" verbose=0 mode="" xvars=() mcas=()
usage() {
    cat >&2 <<'EOF'
  cluster.sh [options] -- PROGRAM [ARGS]   one mpirun of PROGRAM over the cluster
  cluster.sh [options] --exec CMD [ARGS]   set up the cluster, run CMD in the root namespace with
                                           the helpers below in its environment, tear down
Options:
  --hosts N            hosts (default 2)
  --ranks-per-host R   ranks per host for the '--' form (default 1)
  --rate RATE          shape every link to RATE each way (tc units: 100mbit, 1gbit, ...)
  --burst BYTES        tbf burst (default: 4 ms at RATE, at least 64kb)
  -x VAR[=VALUE]       pass VAR to the ranks (mpirun -x); every GCOLL_* and TEST_* variable of
                       the caller's environment is passed on its own
  --mca NAME VALUE     one more Open MPI parameter for mpirun
  -v                   print the set-up commands
Helpers that --exec exports:
  CLUSTER_MPIRUN [--ranks-per-host R] [--baseline-tcp] [mpirun options] PROGRAM [ARGS]
       mpirun in host 1 over every host (np = hosts x R); --baseline-tcp restricts MPI to
       --mca btl tcp,self so that even ranks of one host talk over TCP
  CLUSTER_SHAPE RATE|none    (re)shape every link; CLUSTER_COUNTERS   per-host eth0 rx/tx bytes
  CLUSTER_HOSTS (count), CLUSTER_HOSTNAMES, CLUSTER_IF (eth0), CLUSTER_RATE, CLUSTER_DIR
Exit status: the program's, or 77 with a line "SKIP cluster: REASON" where namespaces, veth or
bridges cannot be made here (not root, no ip/tc/unshare/mpirun, no kernel support).
EOF
    exit "${1:-2}"
}
while [ $# -gt 0 ]; do
    case $1 in
    --hosts) hosts=${2:?}; shift 2 ;;
    --ranks-per-host) rph=${2:?}; shift 2 ;;
    --rate) rate=${2:?}; shift 2 ;;
    --burst) burst=${2:?}; shift 2 ;;
    -x) xvars+=("${2:?}"); shift 2 ;;
    --mca) mcas+=(--mca "${2:?}" "${3:?}"); shift 3 ;;
    -v) verbose=1; shift ;;
    --exec) mode="exec"; shift; break ;;
    --) mode="run"; shift; break ;;
    -h|--help) usage 0 ;;
    *) echo "cluster.sh: unknown option '$1'" >&2; usage ;;
    esac
done
{ [ -n "$mode" ] && [ $# -gt 0 ]; } || usage
case $hosts in ''|*[!0-9]*) usage ;; esac
case $rph in ''|*[!0-9]*) usage ;; esac
{ [ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] && [ "$rph" -ge 1 ]; } || usage

skip() { echo "SKIP cluster: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
for tool in ip tc unshare hostname mpirun; do
    command -v "$tool" >/dev/null 2>&1 || skip "no '$tool' command"
done

P=gc$$                          # prefix of every namespace of this invocation
BR=${P}br                       # the bridge's namespace
IF=eth0                         # each host's interface
DIR=$(mktemp -d "${TMPDIR:-/tmp}/gcoll-cluster.XXXXXX")
made=()                         # namespaces made so far, for the teardown
child=""                        # the program, while it runs
names=()
for i in $(seq 1 "$hosts"); do names+=("${P}h$i"); done

run() { [ $verbose = 1 ] && echo "+ $*" >&2; "$@"; }

# shellcheck disable=SC2317 # called by the EXIT trap
teardown() {
    trap '' INT TERM
    [ -z "$child" ] || kill -TERM "$child" 2>/dev/null
    # whatever still runs in a host (mpirun, an orted, a rank) is ours: TERM, then KILL after 2 s
    local ns left tries=0
    while [ "$tries" -lt 30 ]; do
        left=()
        for ns in "${made[@]}"; do mapfile -t -O "${#left[@]}" left < <(ip netns pids "$ns" 2>/dev/null); done
        [ ${#left[@]} -gt 0 ] || break
        [ "$tries" = 0 ] && kill -TERM "${left[@]}" 2>/dev/null
        [ "$tries" -ge 20 ] && kill -KILL "${left[@]}" 2>/dev/null
        tries=$((tries + 1))
        sleep 0.1
    done
    # deleting a namespace deletes its end of every veth pair, and with it the other end
    for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$DIR"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- namespaces, bridge, veths, addresses
run ip netns add "$BR" 2>/dev/null || skip "cannot create a network namespace (ip netns add)"
made+=("$BR")
run ip -n "$BR" link add br0 type bridge 2>/dev/null || skip "cannot create a bridge (no bridge support)"
run ip -n "$BR" link set br0 up
for i in $(seq 1 "$hosts"); do
    ns=${names[i - 1]}
    run ip netns add "$ns" || skip "cannot create network namespace $ns"
    made+=("$ns")
    run ip -n "$BR" link add "h$i" type veth peer name $IF netns "$ns" 2>/dev/null ||
        skip "cannot create a veth pair (no veth support)"
    run ip -n "$BR" link set "h$i" master br0
    run ip -n "$BR" link set "h$i" up
    run ip -n "$ns" link set lo up
    run ip -n "$ns" addr add "10.77.0.$i/24" dev $IF
    run ip -n "$ns" link set $IF up
done

# --- helpers: rsh agent, hostfiles, shaping, counters, the mpirun wrapper
cat > "$DIR/rsh" <<EOF
#!/bin/sh
# Open MPI's rsh agent: "HOST COMMAND..." runs COMMAND, as ssh would, in HOST's network namespace
# under its own hostname.
host=\$1
shift
case " ${names[*]} " in *" \$host "*) ;; *) echo "cluster rsh: no host '\$host'" >&2; exit 255 ;; esac
exec ip netns exec "\$host" unshare --uts -- sh -c 'hostname "\$0" && exec sh -c "\$*"' "\$host" "\$@"
EOF

cat > "$DIR/shape" <<EOF
#!/bin/sh
# shape RATE|none: tbf on each host's $IF egress (in the host) and on its bridge port egress (in
# the bridge's namespace), so that every link carries RATE each way.
set -e
rate=\$1 burst=\${2:-$burst}
if [ "\$rate" != none ] && [ -z "\$burst" ]; then
    # 4 ms worth of tokens, at least 64 KiB (a whole GSO segment must fit)
    burst=\$(echo "\$rate" | awk '{ v = \$0 + 0; u = tolower(\$0); sub(/^[0-9.]+/, "", u);
        m = (u ~ /^gbit/) ? 1e9 : (u ~ /^mbit/) ? 1e6 : (u ~ /^kbit/) ? 1e3 : (u ~ /^(bit|)\$/) ? 1 : -1;
        if (u ~ /bps\$/) m *= 8; if (m < 0) { print "bad"; exit } b = v * m / 8 * 0.004;
        if (b < 65536) b = 65536; printf "%d", b }')
    [ "\$burst" != bad ] || { echo "shape: cannot read rate '\$rate' (use bit, kbit, mbit, gbit)" >&2; exit 2; }
fi
for i in \$(seq 1 $hosts); do
    for side in "${P}h\$i $IF" "$BR h\$i"; do
        set -- \$side
        tc -n "\$1" qdisc del dev "\$2" root 2>/dev/null || true
        [ "\$rate" = none ] || tc -n "\$1" qdisc add dev "\$2" root tbf rate "\$rate" burst "\$burst" latency 20ms
    done
done
EOF

cat > "$DIR/counters" <<EOF
#!/bin/sh
# counters: per host, the rx and tx bytes of its $IF
for i in \$(seq 1 $hosts); do
    ns=${P}h\$i
    printf '%s %s rx_bytes=%s tx_bytes=%s\n' "\$ns" $IF \\
        \$(ip netns exec "\$ns" cat /sys/class/net/$IF/statistics/rx_bytes /sys/class/net/$IF/statistics/tx_bytes)
done
EOF

ncores=$(nproc)
# shellcheck disable=SC2016,SC1003 # writes a bash script: its $ and \ are for it, not for this one
{
    echo '#!/bin/bash'
    echo '# mpirun over the cluster, from host 1: [--ranks-per-host R] [--baseline-tcp] [mpirun options] PROGRAM [ARGS]'
    echo 'rph=1 btl=tcp,vader,self'
    echo 'while :; do case $1 in'
    echo '    --ranks-per-host) rph=$2; shift 2 ;;'
    echo '    --baseline-tcp) btl=tcp,self; shift ;;'
    echo '    *) break ;; esac; done'
    echo "np=\$(($hosts * rph))"
    echo "hf=$DIR/hostfile.\$rph"
    echo "[ -f \"\$hf\" ] || for h in ${names[*]}; do echo \"\$h slots=\$rph\"; done > \"\$hf\""
    echo 'x=()'
    printf 'for v in $(env | sed -n "s/^\\(\\(GCOLL\\|TEST\\)_[A-Za-z0-9_]*\\)=.*/\\1/p")'
    echo '; do x+=(-x "$v"); done'
    for v in "${xvars[@]}"; do printf 'x+=(-x %q)\n' "$v"; done
    echo 'yield=(); [ $np -gt '"$ncores"' ] && yield=(--mca mpi_yield_when_idle 1)'
    # pml ob1 keeps UCX (which would find shared memory between the namespaces) off the path
    printf 'exec ip netns exec %q unshare --uts -- sh -c %q %q mpirun' "${names[0]}" \
        'hostname "$0" && exec "$@"' "${names[0]}"
    printf ' %q' --allow-run-as-root --oversubscribe --bind-to none --hostfile
    echo ' "$hf" -np $np --map-by ppr:$rph:node \'
    printf ' %q' --mca plm_rsh_agent "$DIR/rsh" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include $IF --mca btl_tcp_if_include $IF --mca pml ob1 "${mcas[@]}"
    echo ' --mca btl $btl "${yield[@]}" "${x[@]}" "$@"'
} > "$DIR/mpirun"
chmod +x "$DIR/rsh" "$DIR/shape" "$DIR/counters" "$DIR/mpirun"

if [ -n "$rate" ]; then
    "$DIR/shape" "$rate" || { echo "cluster.sh: tc could not shape to '$rate'" >&2; exit 2; }
fi

export CLUSTER_DIR=$DIR CLUSTER_HOSTS=$hosts CLUSTER_HOSTNAMES="${names[*]}" CLUSTER_IF=$IF
export CLUSTER_RATE=${rate:-none}
export CLUSTER_MPIRUN=$DIR/mpirun CLUSTER_SHAPE=$DIR/shape CLUSTER_COUNTERS=$DIR/counters
[ $verbose = 1 ] && { echo "cluster: $hosts hosts (${names[*]}), link rate ${rate:-unshaped}" >&2; cat "$DIR/mpirun" >&2; }

# in the background, so that a signal runs the teardown at once instead of after the program
if [ $mode = exec ]; then
    "$@" <&0 &
else
    "$DIR/mpirun" --ranks-per-host "$rph" "$@" <&0 &
fi
child=$!
wait $child
exit $?
