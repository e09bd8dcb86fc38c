"""A rank of a torch.distributed job on the gcoll backend dies mid-training (SIGKILL after some
steps): every survivor's next collective must raise RuntimeError with gcoll's detail (status,
collective, dead rank) well within the process group's timeout, and the survivors must exit.
Each survivor prints "RESULT torch-fault rank=R np=N passed=P failed=F" (tests/python/torch_launch.sh)."""
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import gcoll.torch  # noqa: F401 (registers the backend)

TIMEOUT = 60


def main():
    dist.init_process_group("gcoll", timeout=datetime.timedelta(seconds=TIMEOUT))
    n, me = dist.get_world_size(), dist.get_rank()
    victim = n - 1
    x = torch.ones(1 << 16)
    for _ in range(3):
        dist.all_reduce(x)
    dist.barrier()
    if me == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    passed = failed = 0
    try:
        for _ in range(1000):
            w = dist.all_reduce(x, async_op=True)
            w.wait()
        failed += 1
        print("rank %d: 1000 allreduces after rank %d died, and no error" % (me, victim), flush=True)
    except RuntimeError as e:
        took = time.monotonic() - t0
        msg = str(e)
        for ok, what in [(took < TIMEOUT / 2, "raised after %.1f s (timeout %d s)" % (took, TIMEOUT)),
                         ("GCOLL_ERR_" in msg, "the status is named"),
                         ("allreduce" in msg, "the collective is named"),
                         ("rank %d" % victim in msg, "the dead rank is named")]:
            passed += ok
            failed += not ok
            if not ok:
                print("rank %d: FAIL %s: %s" % (me, what, msg), flush=True)
        print("rank %d: RuntimeError after %.2f s: %s" % (me, took, msg.splitlines()[0]), flush=True)
    print("RESULT torch-fault rank=%d np=%d passed=%d failed=%d" % (me, n, passed, failed), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
