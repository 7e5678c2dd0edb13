"""Model specs: `hf:` references and paths resolve to local files without any network access."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmem_cli.__main__ import main
from cmem_cli.core.errors import ModelError
from cmem_index.model_specs import parse_spec, resolve

GEMMA = "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf"


def test_hf_specs_map_to_a_file_under_the_models_dir(tmp_path: Path) -> None:
    spec = parse_spec(GEMMA)
    assert (spec.owner, spec.repo, spec.filename) == (
        "ggml-org",
        "embeddinggemma-300M-GGUF",
        "embeddinggemma-300M-Q8_0.gguf",
    )
    assert (
        spec.local_path(tmp_path)
        == tmp_path / "ggml-org" / "embeddinggemma-300M-GGUF" / "embeddinggemma-300M-Q8_0.gguf"
    )
    assert spec.url("https://example.test") == (
        "https://example.test/ggml-org/embeddinggemma-300M-GGUF/resolve/main/embeddinggemma-300M-Q8_0.gguf"
    )
    nested = parse_spec("hf:acme/models/sub/dir/m.gguf")
    assert nested.filename == "sub/dir/m.gguf"


@pytest.mark.parametrize(
    "bad",
    [
        "hf:",
        "hf:owner/repo",
        "hf:owner//m.gguf",
        "hf:owner/repo/../../etc/passwd.gguf",
        "hf:o/r/model.bin",
        "  ",
    ],
)
def test_malformed_specs_are_one_line_errors(bad: str) -> None:
    with pytest.raises(ModelError) as info:
        parse_spec(bad)
    assert "\n" not in info.value.message


def test_missing_models_say_how_to_get_them(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        resolve(GEMMA, tmp_path)
    assert "is not downloaded" in info.value.message and "cmem models pull" in info.value.message
    with pytest.raises(ModelError, match="cmem models pull --rerank"):
        resolve("hf:a/b/c.gguf", tmp_path, role="rerank")
    with pytest.raises(ModelError, match="does not exist"):
        resolve(str(tmp_path / "nope.gguf"), tmp_path)


def test_paths_bare_names_and_the_gguf_magic(tmp_path: Path, monkeypatch) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "mine.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    monkeypatch.chdir(tmp_path)
    assert resolve("mine.gguf", models) == models / "mine.gguf"  # a bare name means the models dir
    assert resolve(str(models / "mine.gguf"), tmp_path) == models / "mine.gguf"
    (tmp_path / "fake.gguf").write_text("<html>not a model</html>")
    with pytest.raises(ModelError, match="not a GGUF file"):
        resolve("fake.gguf", models)  # exists in the working directory, so it wins over the models dir


def test_cli_list_reports_configured_and_present_models(tmp_path: Path, monkeypatch, capsys) -> None:
    models = tmp_path / "models"
    (models / "x").mkdir(parents=True)
    (models / "x" / "extra.gguf").write_bytes(b"GGUF" + b"\0" * 100)
    monkeypatch.setenv("CMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CMEM_MODELS_DIR", str(models))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CMEM_EMBED_MODEL", raising=False)
    monkeypatch.delenv("CMEM_RERANK_MODEL", raising=False)
    assert main(["models", "list", "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    embed, rerank = report["configured"]
    assert embed["role"] == "embed" and embed["spec"] == GEMMA and embed["present"] is False
    assert embed["path"] == str(
        models / "ggml-org" / "embeddinggemma-300M-GGUF" / "embeddinggemma-300M-Q8_0.gguf"
    )
    assert rerank == {"role": "rerank", "spec": None, "path": None, "present": False, "size": None}
    assert report["files"] == [{"path": str(models / "x" / "extra.gguf"), "size": 104}]
    assert main(["models", "list"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split("\t")[:3] == ["embed", GEMMA, "missing"]
    assert lines[1].split("\t")[:2] == ["rerank", "off"]
    assert "cmem models pull" in err  # the hint goes to stderr, never into the data


def test_cli_path_and_pull_without_a_configured_model(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("CMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CMEM_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("CMEM_EMBED_MODEL", "none")
    assert main(["models", "path"]) == 8
    assert "no embedding model configured" in capsys.readouterr().err
    assert main(["models", "pull", "--rerank"]) == 8
    _, err = capsys.readouterr()
    assert err.startswith("cmem: no reranker configured") and err.count("\n") == 1
