# Shared steps of the device-call scripts under bench/results (source it; bash). A call's script
# keeps only what it measures: its header (bundle command, what it asks), its cell lists and the
# order of its steps. The scripts from before 2026-11-29 (13) spell these steps out themselves.
#
#   source "$(dirname "$0")/../../lib.sh"     # from bench/results/<device-date>/<topic>/callN.sh
#   nk_init "${1:-gpu-run}" [NAME]            # HERE (the bundle), R ($OUT/NAME, default r), binaries in /tmp
#   nk_abba my_bench                          # my_bench old1 normkit-bench-base; new1; new2; old2
#   nk_ab_summary l f c                       # old/new runs' folders <side><i>-<suffix> -> summary-ab.md
#   nk_tests; nk_sanitize memcheck forward_batch_invariance_past_the_twin
#   nk_peers <bench_peers.py arguments...>    # Liger from the bundle's wheels, output in R/peers
#   nk_end

# The bundle's folder, the results' folder ($OUT/r, or $OUT/NAME: two scripts in one call), and the binaries of bin/all.tar.xz unpacked in /tmp
# (normkit-bench, normkit-bench-base where the bundle has a baseline, cuda-tests); the device,
# its clocks and the date in R/device.txt.
nk_init() {
    HERE="$(cd "$1" && pwd)"
    R="$OUT/${2:-r}"
    mkdir -p "$R"
    (cd /tmp && xz -dc "$HERE/bin/all.tar.xz" | tar xf - && chmod +x normkit-bench* cuda-tests)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/device.txt" 2>&1
    date -u >> "$R/device.txt"
}

step() { echo "== $1 $(date +%T)"; }

# Old, new, new, old: `$1 LABEL BINARY` four times, the baseline build as old.
nk_abba() {
    "$1" old1 normkit-bench-base
    "$1" new1 normkit-bench
    "$1" new2 normkit-bench
    "$1" old2 normkit-bench-base
}

# `normkit-bench ab` over the four runs' folders R/<old|new><1|2>-<suffix> for each suffix given,
# into R/summary-ab.md; prints its last line and the faster / slower lines.
nk_ab_summary() {
    local old="" new="" s
    for s in "$@"; do
        old="$old,$R/old1-$s,$R/old2-$s"
        new="$new,$R/new1-$s,$R/new2-$s"
    done
    /tmp/normkit-bench ab --old "${old#,}" --new "${new#,}" --out "$R/summary-ab.md" | tail -n 1
    grep -E "^faster|^slower" "$R/summary-ab.md" | cut -c1-900
}

# The CUDA suite (soak tests left out), its summary lines.
nk_tests() {
    timeout "${1:-200}" /tmp/cuda-tests --skip soak:: > "$R/tests.log" 2>&1
    echo "tests rc=$?"
    grep -E "test result|FAIL|panicked" "$R/tests.log" | head -20
}

# compute-sanitizer TOOL on one CUDA test (exact name); R/sanitize-TOOL-TEST.log.
nk_sanitize() {
    local log="$R/sanitize-$1-$2.log"
    timeout "${3:-60}" compute-sanitizer --tool "$1" --error-exitcode 3 /tmp/cuda-tests --exact "$2" > "$log" 2>&1
    echo "$1 $2 rc=$? $(date +%T)"
    tail -n 2 "$log" | head -1
}

# The peer script (torch.compile, Liger from the bundle's wheel) with the arguments given; its
# JSON in R/peers.
nk_peers() {
    pip install --no-deps --quiet --target /tmp/pyl "$HERE"/wheels/liger_kernel-*.whl > "$R/pip.log" 2>&1
    echo "pip rc=$?"
    PYTHONPATH=/tmp/pyl PYTHONUNBUFFERED=1 timeout 150 python3 "$HERE/peers/bench_peers.py" "$@" --out "$R/peers" > "$R/peers.log" 2>&1
    echo "peers rc=$? $(date +%T)"
    tail -n 1 "$R/peers.log"
}

# The HTML reports are left out of the results (the Markdown and JSON carry the same figures).
nk_end() {
    rm -f "$R"/*/report.html
    step end
}
