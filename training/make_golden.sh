#!/usr/bin/env bash
# make_golden.sh: fgemma's plain-C reference logits of the real gemma-3-270m Q4_K_M on the first 600
# tokens of the GPL text (past the 512-token sliding window), for train_lora.py --golden: the device
# checks that the transformers model it builds from the dequantized file computes the same (a wrong
# tensor mapping or norm offset stops the run before any training).
#
#   training/make_golden.sh [FGEMMA [MODEL [OUT.npz]]]   # defaults: build/fgemma, the setup.sh model, training/data/golden.npz
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fgemma=${1:-$root/build/fgemma}
model=${2:-$root/.cache/models/gemma-3-270m-q4_k_m.gguf}
out=${3:-$root/training/data/golden.npz}
py=${FG_PYTHON:-$root/.cache/venv-oracle/bin/python}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
all=$("$fgemma" tokenize -m "$model" --bos - < "$root/tests/data/real/gpl-3.0.txt")
ids=$(echo "$all" | awk '{ for (i = 1; i <= 600 && i <= NF; i++) printf "%s%s", $i, (i < 600 ? " " : "") }')
at="9 300 520 599"
"$fgemma" logits -m "$model" --reference --ids "$ids" --at "$at" -o "$tmp/logits.f32"
"$py" - "$tmp/logits.f32" "$out" "$ids" "$at" <<'PY'
import sys
import numpy as np
src, out, ids, at = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
logits = np.fromfile(src, dtype="<f4").reshape(len(at), -1)
np.savez(out, ids=np.array(ids, np.int32), at=np.array(at, np.int32), logits=logits)
print(f"{out}: {len(ids)} ids, logits at {at}, shape {logits.shape}")
PY
