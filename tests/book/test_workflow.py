"""The GitHub Actions workflow cannot run here; check that it parses and mirrors .ci/run."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def load_workflow() -> dict:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text("utf-8"))


def test_workflow_runs_ci_script_and_publishes_the_book():
    workflow = load_workflow()
    test_job, deploy_job = workflow["jobs"]["test"], workflow["jobs"]["deploy"]
    runs = [step.get("run", "") for step in test_job["steps"]]
    assert "bash .ci/run" in runs
    uploads = [s for s in test_job["steps"] if "upload-pages-artifact" in s.get("uses", "")]
    assert uploads and uploads[0]["with"]["path"] == "_build/html"
    assert deploy_job["needs"] == "test"
    assert any("deploy-pages" in s.get("uses", "") for s in deploy_job["steps"])


def test_ci_script_installs_system_packages_then_runs_the_readme_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    installs = [line for line in script.splitlines() if line.startswith("apt-get install")]
    assert len(installs) == 1 and "chromium" in installs[0]
    # The CJK font and Node.js come with requirements.txt, not from the system.
    assert not any(name in installs[0] for name in ("fonts-noto-cjk", "nodejs", "npm"))
    assert script.rstrip().endswith("make test") and "make test" in readme


def test_make_check_runs_the_chapters_an_edit_can_change():
    import sys
    sys.path.insert(0, str(ROOT / "tools"))
    from changed_notebooks import notebooks_to_run

    chapters = sorted(p.name for p in (ROOT / "chapters").glob("[0-9][0-9]*_*.ipynb"))
    assert notebooks_to_run(set()) == []
    assert notebooks_to_run({"chapters/02_activation.ipynb", "README.md"}) == [
        "chapters/02_activation.ipynb"]
    # a chapter's experiments: that chapter, not the first one
    third = notebooks_to_run({"src/onelayer/chapters/ch03_residual.py"})
    assert "chapters/03_residual.ipynb" in third and "chapters/01_ffn.ipynb" not in third
    # setup() is in the book's runtime, which every chapter calls first
    assert len(notebooks_to_run({"src/onelayer/book/runtime.py"})) == len(chapters)
