#!/usr/bin/env bash
# Prepare what a bare GPU machine needs for benchmarks/gpu_sweep.py and adapter_step.py, in DEST
# (an ignored folder of the checkout the device tool sends): the Django-free code (adapters,
# task registry and cards, CLUES reader, S1, the two scripts), the CLUES zip and the default encoder with
# its weights converted to bf16 safetensors (the adapter trains fp32 master weights from them).
#   bash benchmarks/gpu_carry.sh DEST [CLUES_ZIP]
set -euo pipefail
DEST=${1:?destination folder}
ZIP=${2:-${CLUES_DATA:-../shared/clues/CLUES-JSON.zip}}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
rm -rf "$DEST"; mkdir -p "$DEST/tasks_data" "$DEST/benchmarks" "$DEST/encoder"
cp -r "$HERE/fewshot_models" "$DEST/"
cp "$HERE"/tasks_data/{__init__,registry,kinds,cards,clues_format,s1,text_spans}.py "$DEST/tasks_data/"
cp -r "$HERE/examples" "$DEST/"  # tasks of one's own travel as folders: card and JSONL (gpu_sweep.py --task-dir)
cp "$HERE"/benchmarks/{__init__,gpu_sweep,adapter_step}.py "$DEST/benchmarks/"
find "$DEST" -name __pycache__ -prune -exec rm -rf {} +
cp "$ZIP" "$DEST/CLUES-JSON.zip"
"$PY" - "$DEST/encoder" <<'PYEOF'
import shutil, sys
from pathlib import Path
import torch
from safetensors.torch import load_file, save_file
sys.path.insert(0, ".")
from fewshot_models.base import default_encoder_path
src, dst = Path(default_encoder_path()), Path(sys.argv[1])
for f in src.iterdir():
    if f.is_file() and f.name != "model.safetensors":
        shutil.copy(f, dst / f.name)
tensors = {k: (v.to(torch.bfloat16) if v.is_floating_point() else v) for k, v in load_file(src / "model.safetensors").items()}
save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
PYEOF
du -sh "$DEST"
