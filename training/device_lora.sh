#!/usr/bin/env bash
# The tv-270m device runs (training/README.md, "tv-270m"). The base file is too large for one call
# (64 MiB travel per call), so it goes over in pieces that stay on the warm machine:
#
#   training/device_lora.sh piece K      # each of the calls that carry training/data/base-K: stores the piece
#   training/device_lora.sh train [ARGS] # the last call (carries training/data/lora and the last pieces):
#                                        # joins the pieces, checks
#                                        # the SHA-256 inside train_lora.py, trains, writes into $OUT
#   training/device_lora.sh tune [ARGS]  # the same for `fgemma tune`'s data (carries training/data/tune,
#                                        # made by split_base.sh --tune DIR): data.bin, golden.json/.f32, dev.jsonl
# TUNE_DATA names another such directory (default training/data/tune), so that two runs on two data sets
# can share one GPU: each a `tune` of its own, in the background, with its own OUT.
#
# training/split_base.sh makes the pieces and training/data/lora (the data, the golden, the gguf package).
# TV_BUDGET: seconds of training from the start of train_lora.py (default 330).
set -euo pipefail
cd "$(dirname "$0")/.."
store=/tmp/fg-base
case "${1:-}" in
  piece)
    k=${2:?piece number}
    mkdir -p "$store"
    cp "training/data/base-$k/part" "$store/part-$k"
    echo "piece $k: $(stat -c %s "$store/part-$k") bytes; stored: $(ls "$store" | tr '\n' ' ')"
    nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
    ;;
  train | tune)
    mode=$1
    shift
    : "${OUT:?OUT must name the directory whose files come back}"
    if [ "$mode" = train ]; then
      d=training/data/lora
      files=("$d/tv270m-data.bin" "$d/golden.npz")
      run=(--data "$d/tv270m-data.bin" --golden "$d/golden.npz" --dev-jsonl training/tv270m-dev.jsonl)
    else
      d=${TUNE_DATA:-training/data/tune}
      files=("$d/data.bin" "$d/golden.json" "$d/golden.f32" "$d/dev.jsonl")
      run=(--data "$d/data.bin" --golden "$d/golden.json" --dev-jsonl "$d/dev.jsonl")
    fi
    for f in "${files[@]}" "$d/gguf/__init__.py"; do
      [ -f "$f" ] || { echo "device_lora.sh: $f is missing (carry $d)" >&2; exit 1; }
    done
    mkdir -p "$store"
    for p in training/data/base-*/part; do  # pieces carried by this call too
      [ -f "$p" ] || continue
      k=${p#training/data/base-}; k=${k%/part}
      cp "$p" "$store/part-$k"
    done
    n=$(ls "$store" | wc -l)
    cat $(ls "$store"/part-* | sort -t- -k3 -n) > /tmp/base.gguf.$$  # atomic: a second run may join too
    mv /tmp/base.gguf.$$ /tmp/base.gguf
    echo "joined $n pieces: $(stat -c %s /tmp/base.gguf) bytes"
    PY=$(command -v python3 || command -v python)
    export PYTHONPATH="$PWD/$d${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
    init=()
    [ ! -f "$d/init/adapter_config.json" ] || init=(--init-adapter "$d/init")  # training/split_base.sh --init DIR
    exec "$PY" training/train_lora.py "${init[@]}" --base /tmp/base.gguf "${run[@]}" \
      --out "$OUT" --time-budget "${TV_BUDGET:-330}" "$@"
    ;;
  *)
    echo "usage: training/device_lora.sh piece K | train [train_lora.py options] | tune [train_lora.py options]" >&2
    exit 2
    ;;
esac
