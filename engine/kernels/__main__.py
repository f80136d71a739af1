"""`python -m engine.kernels`: compile the C++ CPU kernels into the cache now (an image's
build stage, whose runtime has no compiler) and print the library's path. They are x86
AVX-512 code: elsewhere (an arm64 build host) it says so and exits 0, and the engine
runs on torch's kernels."""

import logging
import platform
import sys

from engine.kernels.cpu_kernels import CpuKernels

if platform.machine().lower() not in ("x86_64", "amd64"):
    print(f"no C++ CPU kernels for {platform.machine()}: the engine uses torch's kernels")
    sys.exit(0)
logging.basicConfig(level=logging.INFO)
print(CpuKernels.build())
