"""What an LLM request is made of: templates, turn facts, cache-ordered rendering, budget."""
