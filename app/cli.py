"""The `r1voice` command: serve | models | bench."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from bench import registry as bench_registry

# numpy's BLAS on one thread, set before anything loads it: every product numpy computes
# here is small (features, filters), the models' own threads do the heavy work, and
# OpenBLAS's helper threads spin between calls, taking CPU from them (docs/benchmarks.md,
# "bench capacity"). A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

LOOPBACK_BINDS = ("127.0.0.1", "localhost", "::1")
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.server import connection_limit
    from app.server.app import create_app
    from app.server.drain import DrainingServer
    from app.settings import Settings
    from app.tools.policy import McpPolicy

    overrides = {
        k: v
        for k, v in {
            "llm_backend": args.llm_backend,
            "llm_model": args.llm_model,
            "quantization": args.quantization,
            "llm_url": args.llm_url,
            "llm_api_key": args.llm_api_key,
            "drain_timeout_s": args.drain_timeout,
            "api_key": args.api_key,
        }.items()
        if v is not None
    }
    loopback = args.host in LOOPBACK_BINDS
    if loopback and "R1VOICE_ALLOWED_HOSTS" not in os.environ:
        overrides.setdefault("allowed_hosts", "localhost,127.0.0.1,::1")  # no DNS rebinding
    settings = Settings.from_env(**overrides)
    if not (loopback or settings.api_key or args.insecure):
        print(
            f"error: refusing to serve on {args.host} without an API key: anyone who can "
            "reach the port could use it. Set R1VOICE_API_KEY (or --api-key), or pass "
            "--insecure if something in front of r1voice already checks who connects.",
            file=sys.stderr,
        )
        return 2
    # R1VOICE_LOG_LEVEL=debug shows each turn decision (app/realtime/turns) and more.
    log_level = os.environ.get("R1VOICE_LOG_LEVEL", "info").lower()
    if log_level not in LOG_LEVELS:
        print(
            f"error: R1VOICE_LOG_LEVEL={log_level!r} is not a log level; use one of "
            + ", ".join(LOG_LEVELS),
            file=sys.stderr,
        )
        return 2
    try:  # said now, not to every session that names an MCP server
        McpPolicy.from_settings(settings)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(format="%(levelname)s:     %(name)s: %(message)s")
    logging.getLogger("r1voice").setLevel(log_level.upper())
    try:
        limits = connection_limit.plan(
            connection_limit.raise_fd_limit(),
            connection_limit.open_fds(),
            settings.max_sessions,
            settings.max_connections,
        )
    except connection_limit.DescriptorLimitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app = create_app(settings)
    limited = connection_limit.ConnectionLimit(app, limits.max_connections)
    config = uvicorn.Config(
        limited,
        backlog=limits.backlog,
        loop=limits.loop,
        host=args.host,
        port=args.port,
        log_level=log_level,
        ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile,
        timeout_graceful_shutdown=settings.drain_timeout_s,
        # a hard stop well past the limit the session answers with message_too_large
        ws_max_size=4 * settings.max_message_bytes,
    )
    state = app.state.server
    server = DrainingServer(config, state.drain, state.sessions, settings.drain_timeout_s)
    limited.connections = server.server_state.connections
    connection_limit.AcceptPauseLog(limits.fd_limit).install()
    logging.getLogger("r1voice").info(connection_limit.describe(limits))
    server.run()
    return 0


def _models(args: argparse.Namespace) -> int:
    from app.catalog import registry as model_registry

    if args.action == "list":
        from app.settings import Settings

        try:  # what `serve` loads, as the environment configures it
            settings = Settings.from_env()
            served = {settings.llm_model, settings.asr_model, settings.tts_voice}
        except ValueError:  # a bad setting: `serve` says which; the list stays useful
            served = set()
        print(f"{'MODEL':28s} {'ROLE':11s} {'SERVED':7s} {'STATE':12s} LOCATION")
        for row in model_registry.list_models():
            mark = "yes" if row.name in served else ""
            print(f"{row.name:28s} {row.role:11s} {mark:7s} {row.state:12s} {row.location}")
        print(
            "SERVED: what `r1voice serve` loads (R1VOICE_LLM_MODEL, R1VOICE_ASR_MODEL, "
            "R1VOICE_TTS_VOICE); a session may switch to the others"
        )
        return 0
    try:
        model_registry.prepare(args.names or None, force=args.force)
    except model_registry.ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


class _BenchParser(argparse.ArgumentParser):
    """The parser of one `r1voice bench NAME`: its bench's own options are added (and its
    module imported) only when that bench is the one asked for."""

    bench_name: str | None = None

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self.bench_name is not None:
            name, self.bench_name = self.bench_name, None
            bench_registry.load(name).add_arguments(self)
        return super().parse_known_args(args, namespace)


def _bench(args: argparse.Namespace) -> int:
    module = bench_registry.load(args.what)
    result = module.run(args)
    text = json.dumps(result, indent=2)
    # a bench with a table prints it; the JSON then goes to --json alone, if one is named
    table = getattr(module, "format_table", None)
    if table is not None:
        print(table(result))
    if table is None or not args.json:
        print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="r1voice", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the page, the Realtime WebSocket and the HTTP APIs")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="default 8000")
    serve.add_argument(
        "--llm-backend",
        choices=["embedded", "transformers", "remote"],
        default=None,
        help="default: R1VOICE_LLM_BACKEND, else embedded (our engine)",
    )
    serve.add_argument("--llm-url", default=None, help="remote: OpenAI-compatible base URL (/v1)")
    serve.add_argument("--llm-api-key", default=None, help="remote: bearer token, if it needs one")
    serve.add_argument(
        "--llm-model",
        default=None,
        help="bundled name, HF directory or .gguf (default: R1VOICE_LLM_MODEL, else the "
        "bundled default: `r1voice models list` marks what serve loads)",
    )
    serve.add_argument(
        "--quantization",
        choices=["int8", "int4", "none"],
        default=None,
        help="default: R1VOICE_QUANTIZATION, else the model's own (int4 for the 1.5B, int8 others)",
    )
    serve.add_argument("--ssl-certfile", default=None, help="serve HTTPS/WSS with this certificate")
    serve.add_argument("--ssl-keyfile", default=None, help="the certificate's private key")
    serve.add_argument("--api-key", default=None, help="require this key (R1VOICE_API_KEY)")
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow serving a non-loopback address without an API key",
    )
    serve.add_argument(
        "--drain-timeout",
        type=int,
        default=None,
        help="seconds to finish open connections on SIGTERM (default: R1VOICE_DRAIN_TIMEOUT_S, else 30)",
    )
    serve.set_defaults(func=_serve)

    models = sub.add_parser("models", help="list or prepare the bundled models")
    models.add_argument("action", nargs="?", default="list", choices=["list", "prepare"])
    models.add_argument("names", nargs="*", help="models to prepare (default: all)")
    models.add_argument("--force", action="store_true", help="prepare again even if cached")
    models.set_defaults(func=_models)

    bench = sub.add_parser("bench", help="run a benchmark, print and save JSON")
    bench_sub = bench.add_subparsers(dest="what", required=True, parser_class=_BenchParser)
    for name, entry in bench_registry.BENCHES.items():
        p = bench_sub.add_parser(name, help=entry.help)
        p.add_argument("--quick", action="store_true", help="small run, about a minute")
        p.add_argument("--json", default=None, help="write the JSON result to this path")
        p.bench_name = name
    bench.set_defaults(func=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
