"""What the benches share: the server under test, the progress log, the machine a result
ran on, peers in processes of their own, the bundled LLMs chosen, nearest-rank percentiles."""
