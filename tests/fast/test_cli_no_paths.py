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


def test_a_script_bound_in_the_projects_file_is_found_from_a_subfolder(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from eventtime.commands.files import read_project

    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\n'
                                             'eventtime_pipelines = ["clicks = jobs/enrich.py", "pages = shop.pages:main"]\n')
    for name in ("clicks", "pages"):  # a binding names a contract the project declares (as pytest asks)
        (tmp_path / f"{name}.contract.yaml").write_text(f"contract: {name}\n")
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    project = read_project(None, None, [], None)

    def of(contract):
        return project.targets(SimpleNamespace(contract=SimpleNamespace(name=contract, implementations=())),
                               tmp_path / "tests" / "x.scenario.yaml")
    assert of("clicks") == ["../jobs/enrich.py"]  # from the project's root, as pytest reads it
    assert of("pages") == ["shop.pages:main"]  # control: a module is no path
    typed = read_project(None, ["clicks=jobs/enrich.py"], [], None)  # typed on the command line: from here
    assert typed.targets(SimpleNamespace(contract=SimpleNamespace(name="clicks", implementations=())),
                         tmp_path / "tests" / "x.scenario.yaml") == ["jobs/enrich.py"]
