#!/usr/bin/env bash
# The tv-mini device run: trains on one GPU and writes what comes back into $OUT (training/README.md).
# Needs the carried training/data (tv-data.bin, tokenizer.json); train.py and tv-dev.jsonl are tracked.
# TV_BUDGET: seconds of training from the start of train.py (default 330; evaluation and saving follow,
# about a minute); extra arguments go to train.py.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?OUT must name the directory whose files come back}"
for f in training/data/tv-data.bin training/data/tokenizer.json; do
  [ -f "$f" ] || { echo "device.sh: $f is missing (carry training/data)" >&2; exit 1; }
done
PY=$(command -v python3 || command -v python)
exec "$PY" training/train.py --data training/data/tv-data.bin --tokenizer training/data/tokenizer.json \
  --dev-jsonl training/tv-dev.jsonl --out "$OUT" --work "${TMPDIR:-/tmp}/tv-mini-work" \
  --time-budget "${TV_BUDGET:-330}" --eval-every 500 "$@"
