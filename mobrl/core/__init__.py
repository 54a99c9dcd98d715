"""What every layer of mobrl shares and that imports nothing of mobrl above it: one-line user
errors, the console, atomic files, metric names, the run dir and its checkpoints."""
