"""`r1voice serve`'s refusals of bad settings, before anything loads; `r1voice models`."""

from __future__ import annotations

import ast
import os
import subprocess
import sys


def test_serve_refuses_an_unknown_log_level_and_names_the_levels() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "R1VOICE_LOG_LEVEL": "loud"},
    )
    assert run.returncode == 2
    assert "R1VOICE_LOG_LEVEL='loud'" in run.stderr and "debug" in run.stderr


def test_serve_refuses_bad_stdio_mcp_servers_and_names_the_setting() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "R1VOICE_MCP_STDIO_SERVERS": "clock=python clock.py"},
    )
    assert run.returncode == 2
    assert "R1VOICE_MCP_STDIO_SERVERS is not JSON" in run.stderr


def _numpy_threads(env: dict[str, str]) -> int:
    """The threads of a process that imported the CLI, then numpy and ran a product."""
    code = (
        "import os, app.cli, numpy; numpy.ones((256, 256)) @ numpy.ones((256, 256)); "
        "print(len(os.listdir('/proc/self/task')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


def test_the_cli_keeps_numpys_blas_on_one_thread_unless_told_otherwise() -> None:
    """OpenBLAS's helper threads spin between calls and took CPU from the models' threads
    (`bench capacity`): the CLI starts numpy with none, and a user's own value holds."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS",)}
    env.pop("OMP_NUM_THREADS", None)
    assert _numpy_threads(env) == 1
    assert _numpy_threads({**env, "OPENBLAS_NUM_THREADS": "2"}) == 2


def test_models_alone_lists_them() -> None:
    # it said "the following arguments are required: action, names" (names are optional)
    from app.cli import build_parser

    args = build_parser().parse_args(["models"])
    assert (args.action, args.names) == ("list", [])
    assert build_parser().parse_args(["models", "prepare", "x"]).names == ["x"]


def _bench_modules_after(code: str) -> list[str]:
    """The bench modules a fresh process holds after running `code` (app.cli imported)."""
    code = f"import sys, app.cli\n{code}\nprint(sorted(m for m in sys.modules if m == 'bench' or m.startswith('bench.')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return list(ast.literal_eval(run.stdout))


def test_bench_loads_only_the_bench_it_runs() -> None:
    # the parser lists every bench from the registry alone
    assert _bench_modules_after("app.cli.build_parser()") == ["bench", "bench.registry"]
    loaded = _bench_modules_after(
        "args = app.cli.build_parser().parse_args(['bench', 'capacity', '--sessions', '1,2'])\n"
        "assert args.sessions == '1,2' and args.what == 'capacity'"
    )
    assert "bench.capacity.capacity" in loaded
    assert not [m for m in loaded if m.startswith(("bench.engine", "bench.asr", "bench.answers"))]


def test_bench_help_lists_the_bench_and_its_own_options() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "bench", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        run.returncode == 0 and "capacity" in run.stdout and "How many conversations" in run.stdout
    )
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "bench", "turns", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0
    assert "--quick" in run.stdout and "--json" in run.stdout and "--echo" in run.stdout
