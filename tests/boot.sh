#!/bin/sh
# Launch without MPI on one host: ranks started as plain processes, found through GCOLL_RANK/
# GCOLL_SIZE/GCOLL_ROOT_ADDR or torchrun's variables, each rank's RESULT line checked; then the
# refusals (a wrong secret, no root, sizes that disagree, malformed values) and, under mpirun, the
# variables ignored with a warning. A line per check, a summary; exit 0 when every check held.
set -u
BINDIR=${BINDIR:-build/default/bin}
PY=/usr/bin/python3
OUT=$(mktemp -d "${TMPDIR:-/tmp}/gcoll-boot.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
checks=0
fail=0
# the variables of the caller's environment would change the job (an MPI launcher's included)
unset GCOLL_RANK GCOLL_SIZE GCOLL_ROOT_ADDR GCOLL_JOB_SECRET GCOLL_BOOT RANK WORLD_SIZE MASTER_ADDR MASTER_PORT \
    OMPI_COMM_WORLD_SIZE PMI_SIZE PMIX_RANK GCOLL_TRANSPORT_INTER GCOLL_TRANSPORT_INTRA
export TEST_QUICK=1

bad() {
    fail=$((fail + 1))
    echo "FAIL: $*"
}

# when a step ended, in seconds from the start: a slow step shows
start=$(date +%s)
lap() {
    echo "at $(($(date +%s) - start))s"
}

# A port nobody listens on now (another process may take it before rank 0 does: rare enough).
free_port() {
    $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# launch TAG "R..." PROG VAR=VALUE... : the ranks R of PROG as background processes, each with the
# given variables and its rank in the variable named by $RANKVAR; waits; $OUT/TAG.R.out and .rc
launch() {
    tag=$1 ranks=$2 prog=$3
    shift 3
    for r in $ranks; do
        (env "$@" "$RANKVAR=$r" timeout 120 "$BINDIR/$prog" > "$OUT/$tag.$r.out" 2>&1; echo $? > "$OUT/$tag.$r.rc") &
    done
    wait
}

upto() { seq 0 $(($1 - 1)) | tr '\n' ' '; }

# results TAG N NAME: every rank exited 0 and printed "RESULT NAME rank=R np=N passed=P failed=0"
results() {
    tag=$1 n=$2 name=$3 r=0 sum=0
    checks=$((checks + 1))
    while [ $r -lt "$n" ]; do
        line=$(grep "^RESULT $name rank=$r np=$n " "$OUT/$tag.$r.out")
        p=$(printf '%s' "$line" | sed -n 's/.* passed=\([0-9]*\) failed=0$/\1/p')
        if [ -z "$p" ] || [ "$(cat "$OUT/$tag.$r.rc")" != 0 ]; then
            bad "$tag: rank $r of $n: exit $(cat "$OUT/$tag.$r.rc"), '${line:-no RESULT line}'"
            tail -n 5 "$OUT/$tag.$r.out"
            return
        fi
        sum=$((sum + p))
        r=$((r + 1))
    done
    echo "ok   $tag: $n ranks, $sum checks passed ($(lap))"
}

# expect TAG R TEXT: rank R failed (exit not 0) and said TEXT
expect() {
    checks=$((checks + 1))
    if [ "$(cat "$OUT/$1.$2.rc")" = 0 ] || ! grep -qF -- "$3" "$OUT/$1.$2.out"; then
        bad "$1: rank $2 did not fail saying '$3' (exit $(cat "$OUT/$1.$2.rc")):"
        tail -n 5 "$OUT/$1.$2.out"
    else
        echo "ok   $1: rank $2 ($(lap)): $(grep -F -- "$3" "$OUT/$1.$2.out" | head -n 1 | cut -c1-150)"
    fi
}

RANKVAR=GCOLL_RANK
for n in 1 2 3 4; do
    launch "gcoll-$n" "$(upto $n)" test_collectives "GCOLL_SIZE=$n" "GCOLL_ROOT_ADDR=127.0.0.1:$(free_port)" GCOLL_TIMEOUT=60
    results "gcoll-$n" "$n" collectives
done
# sub-communicators and duplicates; every rank on TCP (as between hosts), with a job secret
launch split "0 1 2" test_split GCOLL_SIZE=3 "GCOLL_ROOT_ADDR=localhost:$(free_port)" GCOLL_TIMEOUT=60 \
    GCOLL_TRANSPORT_INTRA=inter GCOLL_JOB_SECRET=00112233445566778899aabbccddeeff
results split 3 split
# 17 ranks: the bootstrap tree five levels deep, and the splits' and duplicates' trees in it
launch split-17 "$(upto 17)" test_split GCOLL_SIZE=17 "GCOLL_ROOT_ADDR=127.0.0.1:$(free_port)" GCOLL_TIMEOUT=60
results split-17 17 split
# nonblocking operations on several communicators driven by 2 progress threads; the gradient session
launch overlap "0 1 2" test_overlap GCOLL_SIZE=3 "GCOLL_ROOT_ADDR=127.0.0.1:$(free_port)" GCOLL_TIMEOUT=60 \
    GCOLL_WORKER_COUNT=2
results overlap 3 overlap
launch session "0 1" test_session GCOLL_SIZE=2 "GCOLL_ROOT_ADDR=127.0.0.1:$(free_port)" GCOLL_TIMEOUT=60
results session 2 session

# torchrun's variables: gcoll's root takes MASTER_PORT + 1 (torchrun's store has MASTER_PORT)
RANKVAR=RANK
port=$(free_port)
launch torch "0 1" test_collectives WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((port - 1)) GCOLL_TIMEOUT=60
results torch 2 collectives

# a rank with another secret is refused at once; the others give up after GCOLL_TIMEOUT, naming it
RANKVAR=GCOLL_RANK
port=$(free_port)
good=GCOLL_JOB_SECRET=0123456789abcdef0123456789abcdef
(launch wrong-secret 2 test_split GCOLL_SIZE=3 "GCOLL_ROOT_ADDR=127.0.0.1:$port" GCOLL_TIMEOUT=4 \
    GCOLL_JOB_SECRET=ffffffffffffffffffffffffffffffff) &
launch wrong-secret "0 1" test_split GCOLL_SIZE=3 "GCOLL_ROOT_ADDR=127.0.0.1:$port" GCOLL_TIMEOUT=4 "$good"
wait
expect wrong-secret 2 "refused this rank's hello: a wrong job secret"
expect wrong-secret 0 "rank 2 did not join rank 0 within 4 s (GCOLL_TIMEOUT); refused connections with a wrong job secret"
expect wrong-secret 1 "rank 0 gave up: bootstrap: rank 2 did not join"

# nobody listens at the root address
launch no-root 1 test_split GCOLL_SIZE=2 "GCOLL_ROOT_ADDR=127.0.0.1:$(free_port)" GCOLL_TIMEOUT=1
expect no-root 1 "did not answer within 1 s (GCOLL_TIMEOUT)"

# ranks that disagree on the job's size: refused by rank 0, which fails the job
port=$(free_port)
(launch size 1 test_split GCOLL_SIZE=3 "GCOLL_ROOT_ADDR=127.0.0.1:$port" GCOLL_TIMEOUT=20) &
launch size 0 test_split GCOLL_SIZE=2 "GCOLL_ROOT_ADDR=127.0.0.1:$port" GCOLL_TIMEOUT=20
wait
expect size 0 "rank 1 says the job has 3 ranks, rank 0 says 2"
expect size 1 "refused rank 1: rank 1 says the job has 3 ranks"

# refusals before any connection
launch no-secret 0 test_split GCOLL_SIZE=2 "GCOLL_ROOT_ADDR=10.255.255.1:$(free_port)"
expect no-secret 0 "GCOLL_JOB_SECRET is not set"
launch mpi-inter 0 test_split GCOLL_SIZE=1 "GCOLL_ROOT_ADDR=127.0.0.1:$(free_port)" GCOLL_TRANSPORT_INTER=mpi
expect mpi-inter 0 "GCOLL_TRANSPORT_INTER=mpi: this job was launched without MPI"
launch bad-secret 0 test_split GCOLL_SIZE=1 GCOLL_ROOT_ADDR=127.0.0.1:1 GCOLL_JOB_SECRET=0123456789abcdefXY
expect bad-secret 0 "GCOLL_JOB_SECRET is not valid (18 characters): accepts none or exactly 32 hex digits"
checks=$((checks + 1))
grep -q 0123456789abcdef "$OUT/bad-secret.0.out" && bad "the malformed secret was printed"
launch partial 0 test_split GCOLL_SIZE=2
expect partial 0 "GCOLL_ROOT_ADDR is not set: a launch without MPI needs GCOLL_RANK, GCOLL_SIZE and GCOLL_ROOT_ADDR"
launch bad-addr 0 test_split GCOLL_SIZE=2 GCOLL_ROOT_ADDR=host-without-port
expect bad-addr 0 "GCOLL_ROOT_ADDR='host-without-port' is not valid: accepts none or HOST:PORT"
RANKVAR=RANK
launch torch-bad 0 test_split WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=65535
expect torch-bad 0 "MASTER_PORT='65535' is not valid: accepts an integer from 1 to 65534"

# under an MPI launcher the variables are ignored, with a warning, and MPI carries the job
checks=$((checks + 1))
if out=$(GCOLL_RANK=5 GCOLL_SIZE=9 GCOLL_ROOT_ADDR=127.0.0.1:1 timeout 120 mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -np 2 -x GCOLL_RANK -x GCOLL_SIZE -x GCOLL_ROOT_ADDR "$BINDIR/readme_example" 2>&1) &&
    printf '%s\n' "$out" | grep -q "GCOLL_RANK, GCOLL_SIZE or GCOLL_ROOT_ADDR ignored: an MPI launcher"; then
    echo "ok   mpirun: GCOLL_RANK... ignored with a warning, the job ran over MPI ($(lap))"
else
    bad "mpirun with GCOLL_RANK set:"
    printf '%s\n' "$out" | tail -n 5
fi

echo "$((checks - fail)) of $checks checks passed (MPI-free launch, one host)"
[ $fail = 0 ]
