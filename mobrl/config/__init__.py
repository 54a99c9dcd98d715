"""The single place that composes and validates mobrl's Hydra config (no Ray imports here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mobrl.config.schema import GROUPS, MobrlConfig, register_schema
from mobrl.core.errors import UserError, closest_first, first_line, unknown_choice

CONFIG_MODULE = "mobrl.conf"
CONFIG_NAME = "config"
VERSION_BASE = "1.3"

__all__ = [
    "GROUPS",
    "MobrlConfig",
    "compose",
    "group_options",
    "load_run",
    "run_hydra",
]


def group_options(group: str) -> list[str]:
    """Names of the options of a config group: the YAML files in `conf/<group>/`, and for
    `scenario` also every layout file (mobrl.scenarios.discover)."""
    folder = resources.files(CONFIG_MODULE).joinpath(group)
    names = set(_yaml_names(folder))
    if group == "scenario":
        from mobrl import scenarios

        names |= set(scenarios.discover())
    return sorted(names)


def _yaml_names(folder: Any, prefix: str = "") -> list[str]:
    """Option names of a config group folder, nested folders included (`ppo/small/ma`)."""
    names = []
    for path in folder.iterdir():
        if path.is_dir():
            names.extend(_yaml_names(path, f"{prefix}{path.name}/"))
        elif path.name.endswith(".yaml"):
            names.append(prefix + path.name[: -len(".yaml")])
    return names


#: launchers of Hydra's optional plugins (the `launchers` extra of mobrl installs them)
LAUNCHER_PLUGINS = ("joblib", "submitit_slurm", "submitit_local")


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """Compose the config for `overrides` with Hydra's compose API (for tests and validation)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    register_schema()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(CONFIG_MODULE, version_base=VERSION_BASE):
            return hydra_compose(CONFIG_NAME, overrides=list(overrides))
    except Exception as err:  # Hydra's errors are many-lined; turn them into one line
        _check_keys_exist(overrides)  # an unknown key: name the closest ones
        raise _translate_compose_error(err, overrides) from err
    finally:
        GlobalHydra.instance().clear()


def _leaf_keys(cfg: Any, prefix: str = "") -> list[str]:
    keys = []
    if isinstance(cfg, DictConfig):
        for key in cfg.keys():
            path = f"{prefix}{key}"
            keys.append(path)
            keys.extend(_leaf_keys(cfg._get_node(key), path + "."))
    return keys


def _translate_compose_error(err: Exception, overrides: Sequence[str]) -> UserError:
    from hydra.errors import MissingConfigException

    message = str(err).strip()
    if isinstance(err, MissingConfigException):
        first = first_line(message)
        for launcher in LAUNCHER_PLUGINS:
            if f"hydra/launcher/{launcher}'" in first:
                return UserError(
                    f"hydra/launcher={launcher} needs Hydra's {launcher} launcher plugin, which "
                    "is not installed. Run `pip install 'mobrl[launchers]'`."
                )
        return UserError(first + ". Run `mobrl train --help` for the options.")
    cause = err.__cause__
    first = first_line(err)
    if cause is not None:
        detail = first_line(cause)
        return UserError(f"{first}: {detail}. Fix the value or see `mobrl train --cfg job`.")
    return UserError(f"{first}. See `mobrl train --help`.")


def parse_overrides(overrides: Sequence[str]) -> list[Any]:
    """Hydra's parsed overrides, or a one-line error for a malformed one."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    parsed = []
    for text in overrides:
        try:
            parsed.extend(parser.parse_overrides([text]))
        except OverrideParseException as err:
            key, _, value = text.partition("=")
            if key in GROUPS and value:  # e.g. scenario=smäll: name the options, not the lexer
                raise unknown_choice(
                    key, value, group_options(key), f"Use {key}=<option>."
                ) from None
            raise UserError(
                f"malformed override '{text}': {first_line(err)}. "
                "Write key=value or group=option (quote values with spaces)."
            ) from err
    return parsed


def choices(override: Any) -> list[Any]:
    """The values an override takes: one for a plain override, several for a sweep."""
    if override.is_sweep_override():
        if override.is_discrete_sweep():
            return list(override.sweep_iterator())
        raise UserError(
            f"override '{override.input_line}' sweeps a range; mobrl sweeps discrete values "
            "(a,b,c) with -m, or ranges inside one experiment with a `tune` search space."
        )
    return [override.value()]


def _check_keys_exist(overrides: Sequence[str]) -> None:
    """Name the closest existing key when an override sets a key the config does not have
    (asked only when composing failed: it composes the groups alone)."""
    parsed = parse_overrides(overrides)
    plain = [ov for ov in parsed if not ov.is_add() and not ov.is_delete()]
    key_ovs = [
        ov
        for ov in plain
        if ov.key_or_group not in GROUPS and not ov.key_or_group.startswith("hydra")
    ]
    if not key_ovs:
        return
    groups_only = [ov.input_line for ov in parsed if ov.key_or_group in GROUPS]
    cfg = compose(groups_only)
    known = _leaf_keys(cfg)
    for ov in key_ovs:
        if OmegaConf.select(cfg, ov.key_or_group, default="__missing__") == "__missing__" and (
            ov.key_or_group not in known
        ):
            close = closest_first(ov.key_or_group, known)[:3]
            raise UserError(
                f"unknown config key '{ov.key_or_group}'. Did you mean '{close[0]}'? "
                f"Closest keys: {', '.join(close)}. To add a new key write "
                f"+{ov.input_line}; `mobrl train --cfg job` shows every key."
            )


def run_hydra(task: Callable[[DictConfig], Any], argv: Sequence[str], prog: str) -> None:
    """Run `task` through Hydra's own runner, so -m, --cfg, sweepers and launchers keep their
    Hydra meaning. `argv` are the arguments after the subcommand."""
    import sys

    import hydra

    register_schema()
    main = hydra.main(
        config_path=f"pkg://{CONFIG_MODULE}", config_name=CONFIG_NAME, version_base=VERSION_BASE
    )(task)
    saved = sys.argv
    sys.argv = [prog, *argv]
    try:
        main()
    finally:
        sys.argv = saved


def load_run(run: Any) -> tuple[DictConfig, dict[str, Any]]:
    """A run dir's (`core.rundir.RunDir`) resolved config, checked against the schema, and its
    manifest; one-line errors for a folder that is not a run dir or holds damaged files."""
    import json

    if not run.path.is_dir():
        raise UserError(
            f"--resume '{run.path}' is not a directory. Give the run dir printed at start."
        )
    if not run.is_run():
        raise UserError(
            f"'{run.path}' is not a mobrl run dir (no {run.CONFIG} and {run.MANIFEST}). "
            "Give the run dir that `mobrl train` printed at its start."
        )
    try:
        loaded = OmegaConf.load(run.config_file)
        cfg = OmegaConf.merge(OmegaConf.structured(MobrlConfig), loaded)
        manifest = json.loads(run.manifest_file.read_text())
    except Exception as err:  # YAML, schema or JSON errors of an edited or damaged file
        raise UserError(
            f"cannot read the run's config or manifest in '{run.path}': "
            f"{first_line(err)}. Restore the files or start a new run."
        ) from err
    return cfg, manifest
