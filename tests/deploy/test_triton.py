"""The Triton model repository: config.pbtxt (parsed by a small protobuf-text parser)
and the Python-backend model it runs."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from typing import Any

from engine import AsyncLLM, EngineConfig
from tests.deploy.helpers import ROOT

TRITON = ROOT / "deploy" / "triton"


# ---- Triton ---------------------------------------------------------------------------

TOKEN = re.compile(r'\s*(?:#[^\n]*|("(?:[^"\\]|\\.)*")|([{}\[\]:,])|([^\s{}\[\]:,"#]+))')


def parse_pbtxt(text: str) -> dict[str, list[Any]]:
    """Protobuf text format -> {field: [values]} (every field a list; messages nested)."""
    tokens = [m.group(1) or m.group(2) or m.group(3) for m in TOKEN.finditer(text)]
    tokens = [t for t in tokens if t]
    pos = 0

    def value() -> Any:
        nonlocal pos
        token = tokens[pos]
        pos += 1
        if token == "{":
            return message("}")
        if token == "[":
            items = []
            while tokens[pos] != "]":
                items.append(value())
                if tokens[pos] == ",":
                    pos += 1
            pos += 1
            return items
        if token.startswith('"'):
            return json.loads(token)
        if re.fullmatch(r"-?\d+", token):
            return int(token)
        return {"true": True, "false": False}.get(token, token)

    def message(end: str | None) -> dict[str, list[Any]]:
        nonlocal pos
        fields: dict[str, list[Any]] = {}
        while pos < len(tokens) and tokens[pos] != end:
            name = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
            got = value()
            fields.setdefault(name, []).extend(got if isinstance(got, list) else [got])
            if pos < len(tokens) and tokens[pos] == ",":
                pos += 1
        pos += 1
        return fields

    return message(None)


def test_parse_pbtxt() -> None:
    parsed = parse_pbtxt('a: 1 b { c: "x" } d [ { e: true }, { e: false } ] # note\nf: [1, 2]')
    assert parsed == {"a": [1], "b": [{"c": ["x"]}], "d": [{"e": [True]}, {"e": [False]}]} | {
        "f": [1, 2]
    }


def test_triton_model_repository() -> None:
    model_dir = TRITON / "r1voice_llm"
    config = parse_pbtxt((model_dir / "config.pbtxt").read_text())
    assert config["name"] == [model_dir.name]
    assert config["backend"] == ["python"]
    assert config["model_transaction_policy"][0]["decoupled"] == [True]
    inputs = {i["name"][0]: i for i in config["input"]}
    assert inputs["text_input"]["data_type"] == ["TYPE_STRING"]
    assert all(i.get("optional") == [True] for n, i in inputs.items() if n != "text_input")
    assert [o["name"][0] for o in config["output"]] == ["text_output"]
    assert config["instance_group"][0]["count"] == [1]
    warmup = config["model_warmup"][0]
    assert warmup["inputs"][0]["key"] == ["text_input"]
    parameters = {p["key"][0]: p["value"][0]["string_value"][0] for p in config["parameters"]}
    assert parameters["quantization"] in ("int8", "int4", "none")
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)}
    assert set(parameters) - {"model"} <= engine_fields  # passed to AsyncLLM as config
    source = (model_dir / "1" / "model.py").read_text()
    tree = ast.parse(source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert model.name == "TritonPythonModel"
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    assert {"initialize", "execute", "finalize"} <= set(methods)
    assert "free_all" in ast.unparse(methods["finalize"])  # every KV block back
    for used in re.findall(r"self\.llm\.(\w+)", source):
        assert hasattr(AsyncLLM, used), f"model.py calls AsyncLLM.{used}, which does not exist"
    for name in re.findall(r'_scalar\(request, "(\w+)"', source):
        assert name in inputs, f"model.py reads input {name!r} the config does not declare"
