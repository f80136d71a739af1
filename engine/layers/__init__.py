"""Building blocks of the transformer forward pass."""
