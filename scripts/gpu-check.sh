#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build with the `cuda` feature, run the GPU tests, and bench
# every shipped workload on the device executor (coalescing plan, GPU cost model) against the
# per-block launching baseline. Under 5 minutes. Output: gpu-check.log (and $OUT when set).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log="${OUT:-.}/gpu-check.log"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    cargo --version
    echo "== GPU tests"
    cargo test --release --features cuda --test cuda -- --nocapture
    echo "== bench: cuda (coalesced) vs cuda-pairwise (one launch per block pair), 10 repeats"
    cargo run --release --features cuda --example bench -- workloads/*_*.json \
        --executor cuda --executor cuda-pairwise --repeat 10
} 2>&1 | tee "$log"
