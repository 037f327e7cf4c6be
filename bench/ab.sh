#!/usr/bin/env bash
# ab.sh A.tar B.tar [ROUNDS]: interleaved A/B of two kiln packages of the same
# model. Each round runs `kiln run --print-time --repeat 30` on A, then on B,
# and the medians are printed per package, one column per round. These VMs
# drift by up to 1.7x over an hour, so compare two builds only this way (or
# with bench/bench_models.sh), never with times taken minutes apart.
# KILN (default build/kiln) and KILN_NUM_THREADS (default 2) are honored.
set -eu
[ $# -ge 2 ] || { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
KILN=${KILN:-build/kiln}
R=${3:-4}
for _ in $(seq "$R"); do
  for t in "$1" "$2"; do
    m=$(KILN_NUM_THREADS=${KILN_NUM_THREADS:-2} "$KILN" run "$t" --fill random --print-time --repeat 30 | tail -1 |
        awk '{print $2}')
    echo "$t $m"
  done
done | awk '{a[$1] = a[$1] " " $2} END {for (k in a) print k ":" a[k] "  (median ms per round)"}'
