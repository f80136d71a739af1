"""Weight loading: sharded checkpoints, fused projections, layouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from engine import LLM, SamplingParams
from engine.loading.model_loader import load_model
from tests.engine.tiny_models import build_tiny, hf_greedy


def test_sharded_checkpoint_with_index(tmp_path: Path) -> None:
    path, hf = build_tiny(tmp_path / "sharded", model_type="qwen2", tie=False)
    hf.save_pretrained(tmp_path / "sharded", max_shard_size="100KB")
    assert (path / "model.safetensors.index.json").is_file()
    assert len(list(path.glob("*.safetensors"))) > 1
    llm = LLM(str(path), quantization="none")
    prompt = [5, 9, 3, 7, 11]
    out = llm.generate([prompt], SamplingParams(max_tokens=8, temperature=0, ignore_eos=True))
    assert out[0].token_ids == hf_greedy(hf, prompt, 8)


def test_fused_projections_hold_the_checkpoint_weights(tiny_llama: Path) -> None:
    from safetensors.torch import load_file

    model = load_model(tiny_llama, torch.device("cpu"), torch.float32)
    state = load_file(str(tiny_llama / "model.safetensors"))
    layer = model.layers[1]
    x = torch.randn(3, 64)
    qkv = torch.cat([state[f"model.layers.1.self_attn.{p}_proj.weight"] for p in "qkv"])
    torch.testing.assert_close(layer.self_attn.qkv_proj(x), x @ qkv.t())
    gate_up = torch.cat([state[f"model.layers.1.mlp.{p}_proj.weight"] for p in ("gate", "up")])
    torch.testing.assert_close(layer.mlp.gate_up_proj(x), x @ gate_up.t())


def test_bfloat16_runs_and_mostly_agrees(tiny_llama: Path) -> None:
    prompt = [5, 9, 3, 7, 11, 2, 40]
    params = SamplingParams(max_tokens=6, temperature=0, ignore_eos=True)
    fp32 = LLM(str(tiny_llama), quantization="none").generate([prompt], params)[0].token_ids
    bf16 = (
        LLM(str(tiny_llama), dtype="bfloat16", quantization="none")
        .generate([prompt], params)[0]
        .token_ids
    )
    assert len(bf16) == 6 and bf16[0] == fp32[0]


def test_materialize_matches_to_empty_then_to(tiny_llama: Path) -> None:
    """The loader allocates the meta-built model itself (no sympy import): the same
    tensors as ``to_empty(device).to(dtype)`` (names, shapes, dtypes, devices, grads)."""
    from engine.architectures import MODEL_REGISTRY
    from engine.loading.model_loader import load_config, materialize

    config = load_config(tiny_llama)

    def built() -> torch.nn.Module:
        with torch.device("meta"):
            return MODEL_REGISTRY[config.model_type](config)

    for dtype in (torch.float32, torch.bfloat16):
        ours, theirs = built(), built()
        assert len(list(ours.parameters())) > 10
        materialize(ours, torch.device("cpu"), dtype)
        theirs.to_empty(device=torch.device("cpu")).to(dtype)
        for kind in ("named_parameters", "named_buffers"):
            mine = {n: t for n, t in getattr(ours, kind)()}
            ref = {n: t for n, t in getattr(theirs, kind)()}
            assert list(mine) == list(ref)
            for name, tensor in mine.items():
                other = ref[name]
                assert (tensor.shape, tensor.dtype, tensor.device) == (
                    other.shape,
                    other.dtype,
                    other.device,
                ), name
                assert type(tensor) is type(other) and tensor.requires_grad == other.requires_grad


def test_loading_a_prepared_model_imports_neither_transformers_nor_sympy(
    smollm2_dir: Path,
) -> None:
    """A cold start's load: config and tokenizer without transformers (ModelConfig,
    FastTokenizer), the meta-built model allocated without sympy (materialize)."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\nfrom pathlib import Path\nimport torch\n"
        "from engine.loading.model_loader import load_model, load_tokenizer\n"
        f"d = Path({str(smollm2_dir)!r})\n"
        "m = load_model(d, torch.device('cpu'), torch.float32)\n"
        "assert load_tokenizer(d).encode('Hi') and m.config\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "torch" in loaded and "tokenizers" in loaded
    assert not loaded & {"transformers", "sympy"}, sorted(loaded & {"transformers", "sympy"})


def test_the_tokenizer_loads_beside_the_weights(tiny_llama: Path, monkeypatch: Any) -> None:
    """load() reads the tokenizer on a thread of its own while the weights load, and
    serves what that load returned."""
    import threading

    from engine.config import EngineConfig
    from engine.loading import model_loader

    seen: list[str] = []
    real = model_loader.load_tokenizer

    def recorded(model_dir: Path) -> Any:
        seen.append(threading.current_thread().name)
        return real(model_dir)

    monkeypatch.setattr(model_loader, "load_tokenizer", recorded)
    loaded = model_loader.load(EngineConfig(model=str(tiny_llama), quantization="none"))
    assert len(seen) == 1 and seen[0].startswith("tokenizer-load")
    assert seen[0] != threading.current_thread().name
    expected = real(tiny_llama)
    assert type(loaded.tokenizer) is type(expected)


def test_config_and_tokenizer_never_go_through_transformers_at_once(
    tiny_llama: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """load() reads the tokenizer on a thread beside the weights; where the config and
    the tokenizer both fall back to transformers, the two never run in it together
    (its lazy module, imported on both threads at once, once gave the tokenizer's
    thread a module without AutoTokenizer: the model loaded with no tokenizer)."""
    import json
    import shutil
    import threading

    import transformers

    from engine.config import EngineConfig
    from engine.loading import model_loader

    model_dir = tmp_path / "hf4"
    shutil.copytree(tiny_llama, model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    config["rope_theta"] = config.pop("rope_parameters")["rope_theta"]  # a 4.x config
    (model_dir / "config.json").write_text(json.dumps(config))

    cond = threading.Condition()
    inside: dict[int, str] = {}  # thread -> what it is reading through transformers
    entered: set[str] = set()
    met: list[str] = []

    def recorded(name: str, real: Any) -> Any:
        def from_pretrained(*args: Any, **kwargs: Any) -> Any:
            me = threading.get_ident()
            if me in inside:  # AutoTokenizer reading the config itself
                return real(*args, **kwargs)
            with cond:
                inside[me] = name
                entered.add(name)
                cond.notify_all()
                if cond.wait_for(lambda: len(inside) > 1, 0.5):  # the other thread too
                    met.append(name)
            try:
                return real(*args, **kwargs)
            finally:
                with cond:
                    del inside[me]

        return from_pretrained

    auto_config = transformers.AutoConfig.from_pretrained
    auto_tokenizer = transformers.AutoTokenizer.from_pretrained
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", recorded("config", auto_config))
    monkeypatch.setattr(
        transformers.AutoTokenizer, "from_pretrained", recorded("tokenizer", auto_tokenizer)
    )
    loaded = model_loader.load(EngineConfig(model=str(model_dir), quantization="none"))
    assert entered == {"config", "tokenizer"}  # both went through transformers
    assert met == []
    assert type(loaded.model.config).__name__ == "LlamaConfig"


def test_preparing_a_gguf_model_writes_the_cache_of_its_default_quantization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`r1voice models prepare` leaves the 1.5B's int4 cache (its default), so a first
    start reads it instead of the GGUF's blocks."""
    from engine.loading import model_loader

    written: list[tuple[str, str]] = []
    monkeypatch.setattr(
        model_loader, "write_quantized_cache", lambda path, q: written.append((path.name, q))
    )
    model_loader.prepare_bundled_llm("qwen2.5-coder-1.5b-instruct")
    model_loader.prepare_bundled_llm("smollm2-135m-instruct")
    assert written == [
        ("qwen2.5-coder-1.5b-instruct", "int4"),
        ("smollm2-135m-instruct", "int8"),
    ]
