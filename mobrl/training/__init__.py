"""The train pipeline: the `mobrl train` task and `--resume` (`run`), the RLlib algorithm
config (`algos`), Tune's search space, searchers and stop criteria (`tuning`), evaluation
during training (`periodic_eval`), the live table (`progress`), the free-space guard
(`diskspace`), Ray for one run (`raysession`, `launchers`) and the end-of-run ranking and
summary (`ranking`). Nothing is imported here: its modules are imported by name."""
