"""Search spaces from config: each type becomes the right Tune object; bad specs are one line."""

from __future__ import annotations

import pytest
from ray import tune
from ray.tune.search.sample import Categorical, Float, Integer

from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.envs.factory import ENV_NAME, env_config_from
from mobrl.training import tuning
from mobrl.training.algos import build_algorithm_config
from mobrl.training.checks import validate_command_line


def _space(*overrides: str):
    cfg = validate_command_line(["run=smoke", *overrides])
    algo = build_algorithm_config(cfg, ENV_NAME, env_config_from(cfg))
    return tuning.param_space(cfg, algo), cfg


@pytest.mark.parametrize(
    "spec,check",
    [
        ("{grid:[0.1,0.2]}", lambda d: d == tune.grid_search([0.1, 0.2])),
        ("{choice:[0.1,0.2]}", lambda d: isinstance(d, Categorical) and d.categories == [0.1, 0.2]),
        (
            "{uniform:[0.1,0.2]}",
            lambda d: isinstance(d, Float) and (d.lower, d.upper) == (0.1, 0.2),
        ),
        (
            "{loguniform:[0.001,0.1]}",
            lambda d: isinstance(d, Float) and type(d.sampler).__name__ == "_LogUniform",
        ),
        ("{randint:[1,5]}", lambda d: isinstance(d, Integer) and (d.lower, d.upper) == (1, 5)),
        ("{quniform:[0.1,0.5,0.1]}", lambda d: isinstance(d, Float) and d.sampler.q == 0.1),
    ],
)
def test_each_space_type_becomes_its_tune_object(spec: str, check) -> None:
    (space, locations), _ = _space(f"+tune.param_space.training.gamma={spec}")
    assert locations == {"training.gamma": ("gamma",)}
    assert check(space["gamma"])


def test_keys_land_where_rllib_reads_them() -> None:
    (space, locations), _ = _space(
        "+tune.param_space.training.lambda_={choice:[0.9,0.95]}",
        "+tune.param_space.model.fcnet_hiddens={grid:[[32],[64,64]]}",
    )
    # `training(lambda_=...)` is stored as "lambda"; model keys inside the RLModule config
    assert locations["training.lambda_"] == ("lambda",)
    assert locations["model.fcnet_hiddens"] == ("_model_config", "fcnet_hiddens")
    assert space["_model_config"]["fcnet_hiddens"] == tune.grid_search([[32], [64, 64]])
    config = {"lambda": 0.9, "_model_config": {"fcnet_hiddens": [32]}}
    assert tuning.sampled(config, locations) == {
        "training.lambda_": 0.9,
        "model.fcnet_hiddens": [32],
    }


def test_shipped_sweeps_compose_and_build() -> None:
    for option in ("lr_grid", "random_asha", "optuna", "pbt"):
        (space, locations), cfg = _space(f"tune={option}")
        assert locations and cfg.tune.name == option
        scheduler = tuning.scheduler(cfg, space, locations)
        assert (
            type(scheduler).__name__
            == {
                "lr_grid": "FIFOScheduler",
                "random_asha": "AsyncHyperBandScheduler",
                "optuna": "FIFOScheduler",
                "pbt": "PopulationBasedTraining",
            }[option]
        )
    (space, locations), cfg = _space("tune=optuna")
    assert type(tuning.searcher(cfg)).__name__ == "OptunaSearch"


def test_num_samples_overridable_from_the_command_line() -> None:
    cfg = compose(["tune=lr_grid", "tune.num_samples=8"])
    assert cfg.tune.num_samples == 8 and cfg.tune.name == "lr_grid"


@pytest.mark.parametrize(
    "override,message",
    [
        (
            "+tune.param_space.training.lr={grdi:[1,2]}",
            "unknown search-space type at tune.param_space.training.lr: 'grdi'. Did you mean 'grid'",
        ),
        ("+tune.param_space.training.lr={uniform:[2,1]}", "uniform takes \\[low, high\\]"),
        ("+tune.param_space.training.lr={loguniform:[0,1]}", "loguniform takes"),
        ("+tune.param_space.training.lr={randint:[1.5,3]}", "randint takes"),
        ("+tune.param_space.training.lr={grid:[]}", "grid takes a non-empty list"),
        ("+tune.param_space.training.lr=0.1", "must be one search space"),
        (
            "+tune.param_space.trainig.lr={grid:[1,2]}",
            "unknown tune.param_space section 'trainig'. Did you mean 'training'",
        ),
        ("tune.searcher=optunaa", "unknown tune.searcher 'optunaa'. Did you mean 'optuna'"),
        ("tune.scheduler=ashaa", "unknown tune.scheduler 'ashaa'"),
        (
            "tune.metric=env_runners/episode_retrn_mean",
            "tune.metric 'env_runners/episode_retrn_mean' is not reported by training. Did you mean 'env_runners/episode_return_mean'",
        ),
        ("tune.num_samples=0", "tune.num_samples must be at least 1"),
    ],
)
def test_invalid_specs_are_one_line_user_errors(override: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        validate_command_line([override])


def test_optuna_with_grid_values_names_the_fix() -> None:
    with pytest.raises(UserError, match="optuna cannot take grid values.*choice"):
        validate_command_line(["tune=lr_grid", "tune.searcher=optuna"])


def test_a_key_the_algorithm_lacks_names_the_closest() -> None:
    with pytest.raises(
        UserError,
        match="'tune.param_space.training.lrr' is not a setting.*'tune.param_space.training.lr'",
    ):
        _space("+tune.param_space.training.lrr={grid:[0.1,0.2]}")
    with pytest.raises(UserError, match="'tune.param_space.model.fcnet_hidden' is not a setting"):
        _space("+tune.param_space.model.fcnet_hidden={grid:[[8]]}")


def test_metric_keys_training_reports_are_accepted() -> None:
    for metric in (
        "env_runners/episode_return_mean",
        "env_runners/agent_episode_returns_mean/ue_0",
        "env_runners/ue/3/utility",
        "env_runners/fairness/jain_utility",
        "learners/shared/total_loss",
    ):
        tuning.check_metric(metric)
