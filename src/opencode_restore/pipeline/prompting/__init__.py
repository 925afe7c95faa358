"""What an LLM request is made of: templates, turn facts, the cache-ordered rendering."""
