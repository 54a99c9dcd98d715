"""Search-space errors and `--resume` of a non-run, through `mobrl` processes."""

from __future__ import annotations

from tests.conftest import run_mobrl


def test_resume_of_a_dir_that_is_not_a_run_is_a_user_error(tmp_path) -> None:
    result = run_mobrl("train", "--resume", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "is not a mobrl run dir" in result.stderr and "Traceback" not in result.stderr
    result = run_mobrl("train", "--resume", str(tmp_path), "algo=appo", cwd=tmp_path)
    assert result.returncode == 2 and "drop algo=appo" in result.stderr


def test_cli_search_space_errors_exit_2_before_anything_runs(tmp_path) -> None:
    for override, message in (
        (
            "+tune.param_space.training.lrr={grid:[0.1,0.2]}",
            "'tune.param_space.training.lrr' is not a setting",
        ),
        ("+tune.param_space.training.lr={grdi:[0.1,0.2]}", "Did you mean 'grid'"),
    ):
        result = run_mobrl("train", "scenario=cartpole", override, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr and result.stderr.count("\n") == 1
        assert not list(tmp_path.glob("outputs/*/*/tune"))  # no experiment was started
