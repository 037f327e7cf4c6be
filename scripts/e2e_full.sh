#!/usr/bin/env bash
# e2e_full.sh: the full-size end-to-end models (ResNet-50 and MobileNetV2 at
# 224x224, a BERT-base encoder at seq 128, and the rest of the model bench's
# set, models/e2e/README.md), exported by models/e2e/export_models.py --full,
# compiled and run with the kiln CLI and
# compared with ONNX Runtime's outputs (|got - exp| <= 1e-3 |exp| + 1e-4
# max|exp|). Prints each model's compile time, max error and latency.
#
#   scripts/e2e_full.sh [--out DIR] [--kiln PATH] [--python PY] [--skip-export]
#                       [--repeat N] [MODEL ...]
#
#   --out DIR       where the models go (default /tmp/kiln-e2e-full); not committed
#   --kiln PATH     the kiln CLI (default build/kiln)
#   --python PY     a Python with torch, torchvision, onnx and onnxruntime
#                   (default /tmp/digits-venv/bin/python; see models/e2e/README.md)
#   --skip-export   reuse the models already in DIR
#   --repeat N      latency measurements for kiln run --print-time (default 10)
#   MODEL ...       only these (default: every DIR/NAME.onnx with NAME_io.npz)
# KILN_COMPILE_ARGS adds options to every `kiln compile`
# (e.g. KILN_COMPILE_ARGS="--disabled-pass FuseOps").
# Exit status: 0 if every model passed, 1 otherwise.
set -u
cd "$(dirname "$0")/.."

OUT=/tmp/kiln-e2e-full
KILN=build/kiln
PY=/tmp/digits-venv/bin/python
EXPORT=1
REPEAT=10
MODELS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --kiln) KILN=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --skip-export) EXPORT=0; shift ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "e2e_full.sh: unknown option $1" >&2; exit 2 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
[ -x "$KILN" ] || { echo "e2e_full.sh: $KILN not found; build first (cmake --build build)" >&2; exit 2; }

if [ "$EXPORT" = 1 ]; then
  ONLY=()
  for m in "${MODELS[@]+"${MODELS[@]}"}"; do ONLY+=(--only "$m"); done
  echo "== exporting the full-size models into $OUT"
  "$PY" models/e2e/export_models.py --full --out "$OUT" "${ONLY[@]+"${ONLY[@]}"}" || exit 1
fi
if [ ${#MODELS[@]} -eq 0 ]; then
  for f in "$OUT"/*.onnx; do
    n=$(basename "$f" .onnx)
    [ -f "$OUT/${n}_io.npz" ] && MODELS+=("$n")
  done
fi
[ ${#MODELS[@]} -gt 0 ] || { echo "e2e_full.sh: no models in $OUT" >&2; exit 1; }

# numpy is all the helpers need: Debian's python3 has it
NPY=/usr/bin/python3
split_inputs() {  # split_inputs MODEL.onnx IO.npz IN.npz: the ONNX inputs only
  "$NPY" - "$@" <<'EOF'
import sys, numpy as np
onnx_path, io_path, in_path = sys.argv[1:]
try:
    import onnx
    g = onnx.load(onnx_path, load_external_data=False).graph
    names = {i.name for i in g.input} - {t.name for t in g.initializer}
except ImportError:  # no onnx: the inputs are what is not float32 output-like
    names = None
z = np.load(io_path)
keep = {k: z[k] for k in z.files if names is None or k in names}
np.savez(in_path, **keep)
EOF
}
compare() {  # compare IO.npz OUT.npz: prints "ok|FAIL max_err scale"
  "$NPY" - "$@" <<'EOF'
import sys, numpy as np
exp, got = np.load(sys.argv[1]), np.load(sys.argv[2])
ok, worst, worst_scale = True, 0.0, 0.0
for k in got.files:
    if k not in exp.files:
        print(f"  output {k}: not in {sys.argv[1]}", file=sys.stderr); ok = False; continue
    e, g = exp[k].astype(np.float64), got[k].astype(np.float64)
    if e.shape != g.shape:
        print(f"  output {k}: shape {g.shape}, expected {e.shape}", file=sys.stderr); ok = False; continue
    scale = float(np.max(np.abs(e))) if e.size else 0.0
    err = np.abs(g - e)
    bad = ~(err <= 1e-3 * np.abs(e) + 1e-4 * scale)
    m = float(np.nanmax(np.where(np.isnan(err), np.inf, err))) if e.size else 0.0
    print(f"  output {k}: max |err| {m:.3g}, scale {scale:.4g}, {int(bad.sum())} of {e.size} out of tolerance",
          file=sys.stderr)
    ok &= not bad.any()
    if m / max(scale, 1e-30) >= worst / max(worst_scale, 1e-30):
        worst, worst_scale = m, scale
print("ok" if ok else "FAIL", f"{worst:.3g}", f"{worst_scale:.4g}")
EOF
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
SUMMARY=()
FAILED=0
for n in "${MODELS[@]}"; do
  onnx="$OUT/$n.onnx"; io="$OUT/${n}_io.npz"
  echo "== $n ($(du -h "$onnx" | cut -f1))"
  if [ ! -f "$onnx" ] || [ ! -f "$io" ]; then
    echo "  missing $onnx or $io"; SUMMARY+=("$(printf 'FAIL %-20s missing files' "$n")"); FAILED=1; continue
  fi
  split_inputs "$onnx" "$io" "$OUT/${n}_in.npz" || { FAILED=1; continue; }
  t0=$(now)
  # shellcheck disable=SC2086
  # the kernel cache of this run's folder, never the user's (docs/COMPILE_TIME.md)
  if ! XDG_CACHE_HOME="$OUT/kiln-cache" "$KILN" compile "$onnx" -o "$OUT/$n.tar" ${KILN_COMPILE_ARGS:-}; then
    t=$(since "$t0")
    SUMMARY+=("$(printf 'FAIL %-20s compile failed after %s s' "$n" "$t")"); FAILED=1; continue
  fi
  t=$(since "$t0")
  echo "  compile time: $t s"
  if ! "$KILN" run "$OUT/$n.tar" --inputs "$OUT/${n}_in.npz" --outputs "$OUT/${n}_kiln.npz"; then
    SUMMARY+=("$(printf 'FAIL %-20s run failed (compile %s s)' "$n" "$t")"); FAILED=1; continue
  fi
  read -r verdict err scale < <(compare "$io" "$OUT/${n}_kiln.npz")
  lat=$("$KILN" run "$OUT/$n.tar" --inputs "$OUT/${n}_in.npz" --print-time --repeat "$REPEAT" 2>&1)
  echo "$lat" | sed 's/^/  /'
  med=$(echo "$lat" | awk 'found { print $2; exit } /median/ { found = 1 }')
  [ "$verdict" = ok ] && st=PASS || { st=FAIL; FAILED=1; }
  SUMMARY+=("$(printf '%s %-20s compile %7s s  max |err| %s (scale %s)  median %s ms' \
    "$st" "$n" "$t" "$err" "$scale" "${med:-?}")")
done

echo "== summary ($(nproc) cores, KILN_NUM_THREADS=${KILN_NUM_THREADS:-unset})"
printf '%s\n' "${SUMMARY[@]}"
exit $FAILED
