"""`eventtime run` given no PATH: in a user's project (its pytest settings bind pipelines or name contract
folders) the project's own scenarios, under its testpaths or its root, as pytest collects them; anywhere
else the bundled suite. Told on stderr either way it is not the bundled suite."""
from __future__ import annotations

from eventtime.projectconfig import project_paths


def test_a_project_that_binds_pipelines_runs_its_testpaths(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests/scenarios"]\n'
                                             'eventtime_pipelines = ["clicks = shop.clicks:main"]\n')
    assert project_paths(tmp_path) == [tmp_path / "tests/scenarios"]
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\neventtime_contracts = ["contracts"]\n')
    assert project_paths(tmp_path) == [tmp_path]  # no testpaths: the project's root


def test_elsewhere_a_run_with_no_path_is_the_bundled_suites(tmp_path):
    assert project_paths(tmp_path) is None  # no settings file at all
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    assert project_paths(tmp_path) is None  # control: pytest settings that bind nothing of the kit's
