"""Benches of the engine alone: throughput against its peers (`bench engine`), quantization
(`bench quant`), scheduling under load (`bench serve`), prefix KV reuse (`bench prefix`)."""
