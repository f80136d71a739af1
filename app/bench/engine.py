"""Engine throughput: embedded engine vs transformers (placeholder until the engine lands)."""

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> dict:
    raise SystemExit("the engine benchmark is not written yet")
