"""Who chooses actions: the prompt protocol, action parsing, the LLM agent, built-in agents."""
