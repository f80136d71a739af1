"""`python -m engine.kernels`: compile the C++ CPU kernels into the cache now (an image's
build stage, whose runtime has no compiler) and print the library's path."""

import logging

from engine.kernels.cpu_kernels import CpuKernels

logging.basicConfig(level=logging.INFO)
print(CpuKernels.build())
