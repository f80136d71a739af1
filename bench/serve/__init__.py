"""Serving over HTTP: the fixed-seed request mix, the Poisson drivers (our asyncio client
and a locustfile), the servers compared (r1voice, llama.cpp's, vLLM) and the records."""
