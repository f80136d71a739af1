"""Loading: a model name -> weights on disk -> our (quantized) model on a device."""
