# Sourced by the *_prebuilt.sh scripts from the repository root: P (the prebuilt executables,
# $PRE or pre/), FIN (the call's output folder, $OUT or gpu-out/), OUT (its logs/ folder, packed
# into $FIN/logs.tar.gz on exit) and el (prints the seconds since the start with a label).
P=${PRE:-pre}
FIN=${OUT:-$PWD/gpu-out}; mkdir -p "$FIN"
OUT=$FIN/logs; mkdir -p $OUT
trap 'tar -czf $FIN/logs.tar.gz -C $FIN logs && rm -rf $FIN/logs' EXIT
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
