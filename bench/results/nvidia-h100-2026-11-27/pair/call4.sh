#!/usr/bin/env bash
# Session 2026-11-27 (4), call 4: the pair test alone, every mismatch listed (pair against twin,
# twin against the register kernel). Bundle as in call3.sh (only bin/cuda-tests.xz needed).
xz -dc "${1:-gpu-run}/bin/cuda-tests.xz" > /tmp/ct && chmod +x /tmp/ct && mkdir -p $OUT/r
timeout 100 /tmp/ct pair_forward_matches_register > $OUT/r/pair-diag.log 2>&1; echo rc=$?
grep -E "mismatch|differs|test result" $OUT/r/pair-diag.log | head -60
