#!/usr/bin/python3
"""Predicted against measured: runs gcoll-info --simulate for the layout, collective, sizes and
algorithms of a gcoll_bench CSV and prints, per size, each algorithm's measured median, its
prediction and their ratio, whether the fastest measured is the fastest predicted, and a summary
(how many within a tolerance). Usage:
  bench/simcheck.py CSV HOSTSxRANKS [--min BYTES] [--tol 0.15] [-- gcoll-info --simulate options]
"""
import csv
import os
import subprocess
import sys


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, layout = argv[0], argv[1]
    rest = argv[2:]
    sim_opts = []
    if "--" in rest:
        sim_opts = rest[rest.index("--") + 1:]
        rest = rest[:rest.index("--")]
    lo, tol = 0, 0.15
    while rest:
        if rest[0] == "--min" and len(rest) > 1:
            lo = int(rest[1])
        elif rest[0] == "--tol" and len(rest) > 1:
            tol = float(rest[1])
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
        rest = rest[2:]
    measured = {}  # (bytes, algorithm) -> median us
    coll = None
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            coll = row["collective"]
            # auto's rows ("auto:ring") run a forced algorithm's schedule: the simulator has no pick of its own
            if row["valid"] != "ok" or int(row["bytes"]) < lo or row["algorithm"].startswith("auto"):
                continue
            measured[(int(row["bytes"]), row["algorithm"])] = float(row["gcoll_med_us"])
    if not measured:
        print(f"simcheck: no validated rows of at least {lo} bytes in {path}", file=sys.stderr)
        return 1
    sizes = sorted({b for b, _ in measured})
    algos = sorted({a for _, a in measured})
    info = os.environ.get("GCOLL_INFO", "build/default/bin/gcoll-info")
    predicted = {}
    for b in sizes:  # one size a run: the CSV's sizes need not be a geometric series
        out = subprocess.run([info, "--simulate", layout, "--coll", coll, "--algo", ",".join(algos),
                              "-m", f"{b}:{b}"] + sim_opts, check=True, capture_output=True, text=True).stdout
        lines = [l for l in out.splitlines() if l and not l.startswith("#")]
        head, row = lines[0].split(), lines[1].split()
        print(out.splitlines()[0]) if b == sizes[0] else None
        for k, a in enumerate(algos):
            cell = row[1 + k].rstrip("*")
            predicted[(b, a)] = float(cell) if cell.replace(".", "", 1).isdigit() else None
    print(f"{'bytes':>10} {'algorithm':<20} {'measured us':>12} {'predicted us':>13} {'pred/meas':>9}")
    within = total = order_ok = 0
    for b in sizes:
        for a in algos:
            m, p = measured.get((b, a)), predicted.get((b, a))
            if m is None or p is None:
                continue
            total += 1
            within += abs(p / m - 1) <= tol
            print(f"{b:>10} {a:<20} {m:>12.1f} {p:>13.1f} {p / m:>9.2f}")
        both = [a for a in algos if measured.get((b, a)) and predicted.get((b, a))]
        fast_m = min(both, key=lambda a: measured[(b, a)])
        fast_p = min(both, key=lambda a: predicted[(b, a)])
        # a prediction that picks an algorithm measured within the tolerance of the fastest is right
        ok = measured[(b, fast_p)] <= measured[(b, fast_m)] * (1 + tol)
        order_ok += ok
        print(f"{'':>10} fastest measured {fast_m}, predicted {fast_p}: {'right' if ok else 'WRONG'}")
    print(f"# {within} of {total} predictions within {tol:.0%} of the measured median; "
          f"the fastest right at {order_ok} of {len(sizes)} sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
