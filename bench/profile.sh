#!/usr/bin/env bash
# Profiles `desync analyze` on the benchmark workload (see bench/run.py) at one size:
#   CPU:    perf record (software cpu-clock event: works in VMs without hardware counters),
#           flat self-time top list and the caller-inclusive list; if perf is missing,
#           valgrind --tool=callgrind (run it at a smaller size, e.g. 512: ~50x slower).
#   Memory: heaptrack (peak heap and the allocation sites that hold it) if installed,
#           else valgrind --tool=massif.
# Usage: bench/profile.sh DESYNC DESYNC_SYNTH [RANKS=4096] [OUTDIR=/tmp/desync-bench/profile-RANKS]
# Reports go to OUTDIR/*.txt (perf.self.txt: top functions by self time; perf.stages.txt: CPU by
# pipeline stage and who calls libc's memcmp/malloc; heap.sites.txt: what holds the heap peak;
# time-v.txt). The generated set is deleted at the end (KEEP=1 keeps it). SRC_ROOT: the sources
# the binary was built from (default: this checkout), to name desync's functions in heap.sites.txt.
set -euo pipefail
desync="$1"
synth="$2"
ranks="${3:-4096}"
out="${4:-/tmp/desync-bench/profile-$ranks}"
prefix=nccl_trace_rank_
set_dir="$out/set"
mkdir -p "$out"

# Same workload as bench/run.py: fault on rank N/2+3 at the default PG's middle seq.
rm -rf "$out/probe"
"$synth" --out "$out/probe" --ranks "$ranks" --entries 1 --history 6000 --format json \
  --groups tp=8,dp --ops p2p=0 --seed 3 --prefix "$prefix" 2>/dev/null
seq=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(int(d['pg_status']['0']['last_enqueued_collective'])//2)" "$out/probe/${prefix}0")
rm -rf "$out/probe"
fault="divergence:ranks=$((ranks / 2 + 3)),seq=$seq"
if [ ! -d "$set_dir" ]; then
  "$synth" --out "$set_dir" --ranks "$ranks" --entries 2000 --history 6000 --format pickle --frames \
    --groups tp=8,dp --ops p2p=0 --seed 3 --prefix "$prefix" --fault "$fault"
fi
cat "$set_dir"/* > /dev/null
echo "set: $ranks ranks, $(du -sh "$set_dir" | cut -f1), fault $fault" | tee "$out/README.txt"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src_root="${SRC_ROOT:-$(cd "$here/.." && pwd)}"
if command -v perf > /dev/null && perf record -e cpu-clock -o /dev/null -- true 2> /dev/null; then
  # Flat profile (self time per function).
  perf record -e cpu-clock -F 997 -o "$out/perf.flat.data" -- \
    "$desync" analyze "$set_dir" --format json > "$out/analyze.json" 2> "$out/perf.flat.log" || true
  perf report -i "$out/perf.flat.data" --no-children --sort symbol --stdio --percent-limit 0.3 \
    2> /dev/null > "$out/perf.self.txt"
  perf report -i "$out/perf.flat.data" --no-children --sort dso --stdio 2> /dev/null > "$out/perf.dso.txt"
  # Inclusive profile (DWARF unwinding: release builds have no frame pointers), low rate.
  perf record -e cpu-clock -F 199 --call-graph dwarf,16384 -o "$out/perf.graph.data" -- \
    "$desync" analyze "$set_dir" --format json > /dev/null 2> "$out/perf.graph.log" || true
  perf script -i "$out/perf.graph.data" --no-inline -F comm,tid,period,ip,sym 2> /dev/null \
    | python3 "$here/tools/perf_stages.py" - > "$out/perf.stages.txt"
  rm -f "$out/perf.graph.data"
else
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
    "$desync" analyze "$set_dir" --format json > "$out/analyze.json" 2> "$out/callgrind.log" || true
  callgrind_annotate --inclusive=no "$out/callgrind.out" | head -60 > "$out/callgrind.self.txt"
  callgrind_annotate --inclusive=yes "$out/callgrind.out" | head -60 > "$out/callgrind.incl.txt"
fi

if command -v heaptrack > /dev/null; then
  rm -f "$out"/heaptrack*.zst
  heaptrack -o "$out/heaptrack" "$desync" analyze "$set_dir" --format json > /dev/null 2> "$out/heaptrack.log" || true
  ht="$(ls "$out"/heaptrack*.zst | head -1)"
  heaptrack_print -f "$ht" --print-peaks 0 --print-allocators 0 --print-temporary 0 --print-leaks 0 \
    -F "$out/heap.peak.folded" --flamegraph-cost-type peak > "$out/heaptrack.summary.txt" 2>&1 || true
  python3 "$here/tools/heap_sites.py" "$out/heap.peak.folded" "$src_root" > "$out/heap.sites.txt"
else
  valgrind --tool=massif --massif-out-file="$out/massif.out" \
    "$desync" analyze "$set_dir" --format json > /dev/null 2> "$out/massif.log" || true
  ms_print "$out/massif.out" > "$out/massif.txt"
fi
/usr/bin/time -v "$desync" analyze "$set_dir" --format json > /dev/null 2> "$out/time-v.txt" || true

[ "${KEEP:-0}" = 1 ] || rm -rf "$set_dir"
echo "reports in $out"
