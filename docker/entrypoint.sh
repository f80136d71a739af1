#!/bin/sh
# The GPU image's entrypoint: find the LLM weights, then run the command (r1voice serve).
# R1VOICE_LLM_MODEL set: used as it is (a directory, a .gguf file or a bundled name).
# Otherwise R1VOICE_HF_MODEL (a Hugging Face id) is looked up in /models/<its name>; if it
# is missing it is downloaded there only when R1VOICE_ALLOW_DOWNLOAD=1.
set -eu
if [ -z "${R1VOICE_LLM_MODEL:-}" ] && [ "${R1VOICE_LLM_BACKEND:-embedded}" != "remote" ]; then
    repo="${R1VOICE_HF_MODEL:?set R1VOICE_HF_MODEL or R1VOICE_LLM_MODEL}"
    target="/models/${repo##*/}"
    if [ ! -f "$target/config.json" ]; then
        if [ "${R1VOICE_ALLOW_DOWNLOAD:-0}" = "1" ]; then
            echo "r1voice: downloading $repo into $target (first start only)" >&2
            python3 -c 'import sys; from huggingface_hub import snapshot_download; snapshot_download(sys.argv[1], local_dir=sys.argv[2], allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja"])' "$repo" "$target"
        else
            echo "r1voice: no weights in $target. Mount a volume or directory holding $repo" \
                 "at /models, or start once with -e R1VOICE_ALLOW_DOWNLOAD=1." >&2
            exit 2
        fi
    fi
    export R1VOICE_LLM_MODEL="$target"
fi
exec "$@"
