"""The catalogs of models, below both the speech models (app/speech) and the LLM layer
(app/llm), which use them and not each other: the bundled models, where their files are
and how to prepare them (registry.py), and `ModelCatalog` (model_catalog.py), the models
of one role a session may choose, each loaded once."""
