"""The llm_memory_rl family: params, jobs, claims and tables."""
