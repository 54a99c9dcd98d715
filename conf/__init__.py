"""mobrl's Hydra config groups (installed as the package `mobrl.conf`)."""
