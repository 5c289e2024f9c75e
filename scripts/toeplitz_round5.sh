#!/usr/bin/env bash
# toeplitz_tc harness round 5 (run by the lead's combined call as round2.sh from the tree root): toeplitz_tc tf32 variants for k = 15 and the
# small/main geometry crossover; harness prebuilt here (tunebin/toeplitz_tune, --tf32 mode).
mkdir -p "$OUT/tfp"
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/tfp/tune_tf32.txt" 2>&1
timeout 33 ./tunebin/toeplitz_tune --tf32 >> "$OUT/tfp/tune_tf32.txt" 2>&1
echo "rc=$?" >> "$OUT/tfp/tune_tf32.txt"
