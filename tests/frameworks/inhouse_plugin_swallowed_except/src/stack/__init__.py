"""tinystack: the team's small training stack (YAML config, plugin hooks, DDP loop)."""
