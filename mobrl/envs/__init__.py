"""Environments: the factory RLlib workers call, and the wrappers that adapt each scenario kind."""
