"""TRANSFORMERS_LOCK: held around every import and ``from_pretrained`` of transformers
the loader makes.

The loader reads a model's config and its tokenizer on two threads at once; where both
fall back to transformers, its lazy module, imported and resolved on both threads
together, handed one of them a module without its attributes yet (``module
'transformers' has no attribute 'AutoTokenizer'``), and the model loaded without a
tokenizer. Reentrant: a caller holding it may call another that takes it.
"""

from __future__ import annotations

import threading

TRANSFORMERS_LOCK = threading.RLock()
