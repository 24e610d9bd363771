#!/usr/bin/env bash
# split_base.sh: what the tv-270m device runs carry (training/device_lora.sh): the real base file in
# pieces training/data/base-K/part (K = 0, 1, ...) of at most PIECE_MIB (default 48: a call carries
# 64 MiB with the checkout), and training/data/lora: the tokenized data, the golden logits
# (make_golden.sh) and the gguf package (pure Python; the device image lacks it) from .cache/venv-oracle.
#
#   training/split_base.sh [--init ADAPTER_DIR] DATA.bin [MODEL.gguf]
#   training/split_base.sh [--init ADAPTER_DIR] --tune TUNE_DIR [MODEL.gguf]
# --init: an earlier run's adapter directory, carried as training/data/lora/init (train_lora.py
# --init-adapter continues from it). --tune: `fgemma tune --stage data`'s directory instead of DATA.bin:
# its data.bin, golden.json, golden.f32 and dev.jsonl go to training/data/tune (device_lora.sh tune).
set -euo pipefail
init=
tune=
if [ "${1:-}" = --init ]; then init=${2:?--init needs a directory}; shift 2; fi
if [ "${1:-}" = --tune ]; then tune=${2:?--tune needs a directory}; shift 2; set -- "$tune/data.bin" "$@"; fi
root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:?usage: training/split_base.sh [--init ADAPTER_DIR] DATA.bin [MODEL.gguf]}
model=${2:-$root/.cache/models/gemma-3-270m-q4_k_m.gguf}
piece=$(( ${PIECE_MIB:-48} * 1048576 ))
out=$root/training/data
rm -rf "$out"/base-* "$out/lora" "$out/tune"
size=$(stat -c %s "$model")
k=0
for ((off = 0; off < size; off += piece)); do
  mkdir -p "$out/base-$k"
  dd if="$model" of="$out/base-$k/part" bs=1048576 skip=$((off / 1048576)) count=$((piece / 1048576)) status=none
  k=$((k + 1))
done
echo "split_base.sh: $model ($size bytes) in $k pieces under $out/base-*"
if [ -n "$tune" ]; then
  dst=$out/tune
  mkdir -p "$dst"
  cp "$tune/data.bin" "$tune/golden.json" "$tune/golden.f32" "$tune/dev.jsonl" "$dst/"
else
  dst=$out/lora
  mkdir -p "$dst"
  cp "$data" "$dst/tv270m-data.bin"
  [ -f "$out/golden.npz" ] || "$root/training/make_golden.sh"
  cp "$out/golden.npz" "$dst/golden.npz"
fi
if [ -n "$init" ]; then
  mkdir -p "$dst/init"
  cp "$init/adapter_config.json" "$init/adapter_model.safetensors" "$dst/init/"
fi
site=$(ls -d "$root"/.cache/venv-oracle/lib/python3*/site-packages)
cp -r "$site/gguf" "$dst/gguf"
find "$dst/gguf" -name __pycache__ -prune -exec rm -rf {} +
du -sh "$out"/base-* "$dst"
