"""KernelChoice: the int8 path of each shape and row class, measured once per machine,
cached and reused; and every mix of paths gives the bits our kernel gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine import LLM, EngineConfig, SamplingParams
from engine.errors import ConfigError
from engine.kernels.cpu_kernels import CpuKernels
from engine.layers import kernel_choice
from engine.layers import quantization as Q
from engine.layers.kernel_choice import ROW_CLASSES, KernelChoice

needs_kernels = pytest.mark.skipif(
    CpuKernels.ops() is None, reason=str(CpuKernels.unavailable_reason())
)


needs_amx = pytest.mark.skipif(
    not kernel_choice.amx_ready(), reason="needs AMX tiles (amx_int8) and our C++ kernels"
)


@pytest.fixture
def both_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch._int_mm is a candidate even where it is slow (it is measured either way);
    the AMX kernel is left out, so the same two candidates run on every machine."""
    monkeypatch.setattr(kernel_choice, "int_mm_is_fast", lambda: True)
    monkeypatch.setattr(kernel_choice, "amx_ready", lambda: False)


@needs_kernels
def test_a_choice_is_timed_once_then_read_from_the_cache(
    tmp_path: Path, both_candidates: None
) -> None:
    first = KernelChoice("measure", tmp_path)
    assert first.candidates == ("vnni", "int_mm")
    made = first.choose([(64, 48), (32, 80), (64, 48)])
    assert first.timed_shapes == 2 and first.source == "measured"
    (file,) = tmp_path.glob("*.json")
    assert set(json.loads(file.read_text())) == {"64x48", "32x80"}
    for choice in made.values():
        assert len(choice.paths) == len(ROW_CLASSES) and set(choice.paths) <= {"vnni", "int_mm"}
        assert all(set(ms) == {"vnni", "int_mm"} and min(ms.values()) > 0 for ms in choice.ms)

    again = KernelChoice("measure", tmp_path)
    assert again.choose([(64, 48), (32, 80)]) == made
    assert again.timed_shapes == 0 and again.source == "cached"

    more = KernelChoice("measure", tmp_path)
    assert more.choose([(64, 48), (16, 16)])[(64, 48)] == made[(64, 48)]
    assert more.timed_shapes == 1  # only the new shape
    assert set(json.loads(file.read_text())) == {"64x48", "32x80", "16x16"}


@needs_kernels
def test_the_cache_is_per_thread_count(
    tmp_path: Path, both_candidates: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    KernelChoice("measure", tmp_path).choose([(32, 32)])
    monkeypatch.setattr(torch, "get_num_threads", lambda: 97)
    other = KernelChoice("measure", tmp_path)
    other.choose([(32, 32)])
    assert other.timed_shapes == 1 and len(list(tmp_path.glob("*.json"))) == 2


@needs_kernels
@pytest.mark.parametrize(
    ("vnni_s", "int_mm_s", "path"),
    [(1.0, 0.95, "vnni"), (1.0, 0.5, "int_mm"), (0.4, 1.0, "vnni")],
)
def test_torch_is_taken_only_when_clearly_faster(
    tmp_path: Path,
    both_candidates: None,
    monkeypatch: pytest.MonkeyPatch,
    vnni_s: float,
    int_mm_s: float,
    path: str,
) -> None:
    """Within MARGIN our kernel stays: nothing gets slower where the two are close, and
    torch's path costs a second copy of the weights."""
    times = {"vnni": vnni_s, "int_mm": int_mm_s}
    monkeypatch.setattr(kernel_choice, "_best_interleaved", lambda calls: dict(times))
    (choice,) = KernelChoice("measure", tmp_path).choose([(32, 32)]).values()
    assert choice.paths == (path,) * len(ROW_CLASSES)
    assert choice.ms[0] == {"vnni": vnni_s * 1e3, "int_mm": int_mm_s * 1e3}
    assert f"1-3 rows: {path} (vnni " in choice.describe()


def test_a_forced_path_is_not_timed(tmp_path: Path) -> None:
    chooser = KernelChoice("int_mm", tmp_path)
    assert chooser.choose([(32, 32)])[(32, 32)].paths == ("int_mm",) * len(ROW_CLASSES)
    assert chooser.timed_shapes == 0 and chooser.source == "forced"
    assert not list(tmp_path.iterdir())


@needs_kernels
def test_a_broken_cache_file_is_timed_again(tmp_path: Path, both_candidates: None) -> None:
    KernelChoice("measure", tmp_path).choose([(32, 32)])
    (file,) = tmp_path.glob("*.json")
    file.write_text("{not json")
    chooser = KernelChoice("measure", tmp_path)
    chooser.choose([(32, 32)])
    assert chooser.timed_shapes == 1 and "32x32" in json.loads(file.read_text())


def test_an_unknown_mode_is_refused_by_name(tiny_llama: Path) -> None:
    with pytest.raises(ConfigError, match=r"int8_kernel must be one of .*'amx'.*got 'onednn'"):
        KernelChoice("onednn")
    with pytest.raises(ConfigError, match="int8_kernel must be one of"):
        EngineConfig(model=str(tiny_llama), int8_kernel="fastest")


def test_amx_forced_where_there_is_none_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_choice, "amx_ready", lambda: False)
    with pytest.raises(ConfigError, match=r"int8_kernel='amx' needs AMX tiles.*'measure'"):
        KernelChoice("amx", tmp_path)


@needs_amx
def test_amx_is_measured_where_it_runs_and_only_for_widths_it_takes(tmp_path: Path) -> None:
    chooser = KernelChoice("measure", tmp_path)
    assert "amx" in chooser.candidates
    made = chooser.choose([(128, 48), (96, 48)])
    assert all("amx" in ms for ms in made[(128, 48)].ms)
    assert not any("amx" in ms for ms in made[(96, 48)].ms)
    assert "amx" not in made[(96, 48)].paths
    forced = KernelChoice("amx", tmp_path).choose([(128, 48), (96, 48)])
    assert forced[(128, 48)].paths == ("amx",) * 4 and forced[(96, 48)].paths == ("vnni",) * 4


@needs_amx
@pytest.mark.parametrize(
    "paths", [("vnni", "amx", "amx", "amx"), ("amx", "vnni", "int_mm", "vnni"), ("amx",) * 4]
)
def test_every_mix_with_amx_gives_our_kernels_bits(paths: tuple[str, ...]) -> None:
    torch.manual_seed(8)
    w, bias = torch.randn(70, 128) * 0.05, torch.randn(70)
    ours, mixed = Q.Int8Linear.from_float(w, bias), Q.Int8Linear.from_float(w, bias)
    ours.prepare()
    mixed.prepare()
    mixed.take_paths(paths)
    assert mixed.vnni is not None  # the packing AMX reads too
    assert mixed.only_ours() == ("int_mm" not in paths)
    assert (mixed.weight_t is not None) == ("int_mm" in paths)
    for rows in (1, 3, 4, 8, 9, 40, 64, 65, 130):
        x = torch.randn(rows, 128) * torch.rand(rows, 1) * 10
        assert torch.equal(mixed(x), ours(x)), rows


@needs_kernels
@pytest.mark.parametrize(
    "paths",
    [("vnni", "vnni", "int_mm", "vnni"), ("int_mm", "vnni", "vnni", "int_mm"), ("int_mm",) * 4],
)
def test_every_mix_of_paths_gives_our_kernels_bits(paths: tuple[str, ...]) -> None:
    torch.manual_seed(7)
    w, bias = torch.randn(70, 37) * 0.05, torch.randn(70)
    ours, mixed = Q.Int8Linear.from_float(w, bias), Q.Int8Linear.from_float(w, bias)
    q = mixed.weight.clone()
    ours.prepare()
    mixed.prepare()
    mixed.take_paths(paths)
    assert mixed.weight_t is not None and torch.equal(mixed.weight_t, q.t())  # unpacked
    assert (mixed.vnni is None) == ("vnni" not in paths) and not mixed.only_ours()
    for rows in (1, 3, 4, 8, 9, 40, 64, 65, 130):
        x = torch.randn(rows, 37) * torch.rand(rows, 1) * 10
        assert torch.equal(mixed(x), ours(x)), rows


@needs_kernels
def test_the_engine_reports_its_paths_and_answers_the_same_on_each(tiny_llama: Path) -> None:
    prompts = [[5, 6, 7, 8], list(range(2, 90))]
    tokens, paths = [], []
    modes = ("vnni", "int_mm", "measure", *(("amx",) if kernel_choice.amx_ready() else ()))
    for mode in modes:
        llm = LLM(str(tiny_llama), quantization="int8", int8_kernel=mode)
        params = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
        tokens.append([o.token_ids for o in llm.generate(prompts, params)])
        paths.append(llm.stats().int8_paths)
        llm.close()
    assert all(t == tokens[0] for t in tokens)
    (head,) = [name for name in paths[0] if name.startswith("head ")]
    assert paths[0] and set(paths[0].values()) == {"vnni vnni vnni vnni"}
    # the head takes our kernels only: torch's path would copy the whole table
    assert paths[1].pop(head) == "vnni vnni vnni vnni"
    assert set(paths[1].values()) == {"int_mm int_mm int_mm int_mm"}
    assert paths[2].keys() == paths[0].keys()
    assert "int_mm" not in paths[2][head]


def test_the_heads_choice_is_among_our_kernels_only(tmp_path: Path, both_candidates: None) -> None:
    """The LM head never takes torch's path (it would copy the whole table): forced, it
    gets our VNNI kernel; measured, torch's path is not even timed."""
    forced = KernelChoice("int_mm", tmp_path, ours_only=True).choose([(32, 32)])
    assert forced[(32, 32)].paths == ("vnni",) * len(ROW_CLASSES)
    measured = KernelChoice("measure", tmp_path, ours_only=True)
    assert "int_mm" not in measured.candidates
