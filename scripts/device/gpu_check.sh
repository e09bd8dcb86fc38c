#!/bin/bash
# The GPU checks, run on the lent machine after scripts/device/prepare.sh here: test_cuda at 1-4
# processes (IPC, on, off; staged over TCP, reducing on the GPU), torch's copy bandwidth, and
# gcoll_bench -d cuda (IPC, staged, staged over TCP; NCCL beside it where it runs).
# Device call: command "bash scripts/device/gpu_check.sh [adasum|compress]", carry .dev, lib; a
# section runs only its share: adasum (test_cuda at 1-3 processes, the Adasum benchmark over IPC
# and staged), compress (test_cuda staged over TCP, compressed allreduce staged over TCP).
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=/dev/null # .dev/ompi/env.sh is the bundle prepare.sh unpacks, not in the tree
. .dev/ompi/env.sh
B=.dev/bin
R="timeout 150 mpirun --bind-to none"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
$B/gcoll-info 2>&1 | grep -i cuda
adasum() {
  for ipc in auto off; do
    echo "== bench adasum np=2 GCOLL_CUDA_IPC=$ipc"
    $R -np 2 -x GCOLL_CUDA_IPC=$ipc $B/gcoll_bench adasum -d cuda -m 1M:64M -f 8 -i 20 2>&1 | grep -v "^$" | tail -6
  done
  echo "== bench adasum np=4 IPC"; $R -np 4 $B/gcoll_bench adasum -d cuda -m 64M:64M -i 20 2>&1 | tail -2
}
# staged across hosts, as TCP between the ranks of this one shows it: reductions on the GPU
T=(-x GCOLL_CUDA_IPC=off -x GCOLL_TRANSPORT_INTRA=inter -x GCOLL_TCP_IFNAME=lo)
compress() {
  for np in 2 4; do
    for c in none fp16 bf16; do
      echo "== bench allreduce np=$np staged over TCP --compress $c"
      $R -np $np "${T[@]}" $B/gcoll_bench allreduce -d cuda -m 64M:64M -i 10 --compress $c --baseline none 2>&1 | tail -2 | head -1
    done
  done
}
case "${1:-}" in
adasum)
  for np in 1 2 3; do echo "== test_cuda np=$np"; $R -np $np $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|SKIP|rror" | head -8; done
  adasum
  exit 0 ;;
compress)
  for np in 2 3; do echo "== test_cuda np=$np staged over TCP"; $R -np $np "${T[@]}" -x GCOLL_CUDA_REDUCE_MIN=0 $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|rror" | head -8; done
  echo "== test_cuda np=2"; $R -np 2 $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|rror" | head -8
  compress
  exit 0 ;;
esac
for np in 1 2 3 4; do echo "== test_cuda np=$np"; $R -np $np $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|SKIP|rror" | head -8; done
echo "== test_cuda np=2 GCOLL_CUDA_IPC=on"; $R -np 2 -x GCOLL_CUDA_IPC=on $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|rror" | head -8
for np in 2 3; do echo "== test_cuda np=$np GCOLL_CUDA_IPC=off"; $R -np $np -x GCOLL_CUDA_IPC=off $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|rror" | head -8; done
python3 - <<'PY'
import torch
for n in (64 << 20, 256 << 20):
    x = torch.ones(n, dtype=torch.uint8, device='cuda'); y = torch.empty_like(x)
    for _ in range(5): y.copy_(x)
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(50): y.copy_(x)
    e.record(); e.synchronize()
    ms = s.elapsed_time(e) / 50
    print(f"torch D2D copy {n>>20} MiB: {ms*1000:.1f} us, {2*n/ms/1e6:.0f} GB/s read+written")
PY
for ipc in auto off auto; do
  echo "== bench allreduce np=2 GCOLL_CUDA_IPC=$ipc"
  $R -np 2 -x GCOLL_CUDA_IPC=$ipc $B/gcoll_bench allreduce -d cuda -m 1M:64M -f 4 -i 100 --baseline none 2>&1 | grep -v "^$" | tail -8
done
echo "== bench allreduce np=2 small IPC"; $R -np 2 $B/gcoll_bench allreduce -d cuda -m 8:64K -f 64 -i 200 --baseline none 2>&1 | tail -4
echo "== bench allreduce np=4 IPC"; $R -np 4 $B/gcoll_bench allreduce -d cuda -m 1M:64M -f 8 -i 40 --baseline none 2>&1 | tail -3
for c in reduce_scatter allgather bcast alltoall; do echo "== bench $c np=2 IPC"; $R -np 2 $B/gcoll_bench $c -d cuda -m 64M:64M -i 40 --baseline none 2>&1 | tail -2 | head -1; done
for np in 3 4; do echo "== bench allreduce np=$np staged"; $R -np $np -x GCOLL_CUDA_IPC=off $B/gcoll_bench allreduce -d cuda -m 1M:64M -f 64 -i 10 --baseline none 2>&1 | tail -3; done
for np in 2 3 4; do echo "== test_cuda np=$np staged over TCP"; $R -np $np "${T[@]}" -x GCOLL_CUDA_REDUCE_MIN=0 $B/test_cuda 2>&1 | grep -E "RESULT|FAIL|rror" | head -8; done
for np in 2 3 4; do
  for c in allreduce reduce_scatter; do
    echo "== bench $c np=$np staged over TCP"; $R -np $np "${T[@]}" $B/gcoll_bench $c -d cuda -m 1M:64M -f 64 -i 10 --baseline none 2>&1 | tail -3
  done
done
adasum
compress
