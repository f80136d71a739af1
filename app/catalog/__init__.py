"""Model catalogs, shared by the LLM layer (app/llm) and the speech models (app/models) so
that app/llm imports nothing of app/models: `ModelCatalog` (model_catalog.py) holds the
models of one role a session may choose, each loaded once."""
