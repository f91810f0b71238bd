"""A reused environment is installed again exactly when something the install reads has changed."""

from __future__ import annotations

import json
from pathlib import Path

from harness.install_state import install_digest, is_installed, mark_installed, npm_inputs


def test_the_digest_follows_the_arguments_and_every_file_the_install_reads(tmp_path: Path):
    constraints, pyproject = tmp_path / "constraints.txt", tmp_path / "pyproject.toml"
    constraints.write_text("crewai==1.15.0\n")
    pyproject.write_text("[project]\nname = 'x'\n")
    args = ["-e", ".", "crewai>=1.15,<1.16", "-c", str(constraints)]
    first = install_digest(args, [pyproject])
    assert install_digest(args, [pyproject]) == first
    assert install_digest([*args[:2], "crewai>=1.14,<1.15", *args[3:]], [pyproject]) != first
    constraints.write_text("crewai==1.15.1\n")
    second = install_digest(args, [pyproject])
    assert second != first
    pyproject.write_text("[project]\nname = 'x'\ndependencies = ['httpx']\n")
    assert install_digest(args, [pyproject]) != second
    lock = tmp_path / "package-lock.json"
    absent = install_digest([], [lock])
    lock.write_text("{}")
    assert install_digest([], [lock]) != absent


def test_an_environment_is_installed_only_with_a_marker_of_the_same_digest(tmp_path: Path):
    env = tmp_path / "venv"
    env.mkdir()
    assert not is_installed(env, "a")
    mark_installed(env, "a")
    assert is_installed(env, "a") and not is_installed(env, "b")
    mark_installed(env, "b")
    assert is_installed(env, "b") and not is_installed(env, "a")


def test_a_change_in_a_local_npm_dependency_installs_again(tmp_path: Path):
    # npm copies a `file:` dependency into node_modules (install-links): its files are inputs of the install
    tools, adapter = tmp_path / "js" / "tools", tmp_path / "adapters" / "a"
    tools.mkdir(parents=True)
    adapter.mkdir(parents=True)
    (tools / "tools.mjs").write_text("export const a = 1;\n")
    (adapter / "package.json").write_text(json.dumps({"dependencies": {"tools": "file:../../js/tools", "ai": "7"}}))
    (adapter / "package-lock.json").write_text("{}")
    first = install_digest(["npm", "ci"], npm_inputs(adapter))
    assert install_digest(["npm", "ci"], npm_inputs(adapter)) == first
    (tools / "tools.mjs").write_text("export const a = 2;\n")
    assert install_digest(["npm", "ci"], npm_inputs(adapter)) != first
