#!/usr/bin/env bash
# split_base.sh: what the tv-270m device runs carry (training/device_lora.sh): the real base file in
# pieces training/data/base-K/part (K = 0, 1, ...) of at most PIECE_MIB (default 48: a call carries
# 64 MiB with the checkout), and training/data/lora: the tokenized data, the golden logits
# (make_golden.sh) and the gguf package (pure Python; the device image lacks it) from .cache/venv-oracle.
#
#   training/split_base.sh [--init ADAPTER_DIR] DATA.bin [MODEL.gguf]
# --init: an earlier run's adapter directory, carried as training/data/lora/init (train_lora.py
# --init-adapter continues from it).
set -euo pipefail
init=
if [ "${1:-}" = --init ]; then init=${2:?--init needs a directory}; shift 2; fi
root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:?usage: training/split_base.sh [--init ADAPTER_DIR] DATA.bin [MODEL.gguf]}
model=${2:-$root/.cache/models/gemma-3-270m-q4_k_m.gguf}
piece=$(( ${PIECE_MIB:-48} * 1048576 ))
out=$root/training/data
rm -rf "$out"/base-* "$out/lora"
size=$(stat -c %s "$model")
k=0
for ((off = 0; off < size; off += piece)); do
  mkdir -p "$out/base-$k"
  dd if="$model" of="$out/base-$k/part" bs=1048576 skip=$((off / 1048576)) count=$((piece / 1048576)) status=none
  k=$((k + 1))
done
echo "split_base.sh: $model ($size bytes) in $k pieces under $out/base-*"
mkdir -p "$out/lora"
cp "$data" "$out/lora/tv270m-data.bin"
[ -f "$out/golden.npz" ] || "$root/training/make_golden.sh"
cp "$out/golden.npz" "$out/lora/golden.npz"
if [ -n "$init" ]; then
  mkdir -p "$out/lora/init"
  cp "$init/adapter_config.json" "$init/adapter_model.safetensors" "$out/lora/init/"
fi
site=$(ls -d "$root"/.cache/venv-oracle/lib/python3*/site-packages)
cp -r "$site/gguf" "$out/lora/gguf"
find "$out/lora/gguf" -name __pycache__ -prune -exec rm -rf {} +
du -sh "$out"/base-* "$out/lora"
