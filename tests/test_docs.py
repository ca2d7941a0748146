"""The docs site builds with --strict (warnings are errors), and its examples run: the env and
viewer contracts, a learner of your own, the benchmark-entry commands, the plugin metadata."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import marl

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "pages"


def page(name: str) -> str:
    return (PAGES / name).read_text()


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {title}' section"
    return match.group(1)


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^ *```{lang}\n(.*?)^ *```", text, re.M | re.S)


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason='needs ".[docs]"')
def test_the_site_builds_strictly(tmp_path):
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "docs/mkdocs.yml",
           "-d", str(tmp_path / "site")]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    env_page = (tmp_path / "site" / "reference" / "env" / "index.html").read_text()
    assert "marl.core.env.TimeStep" in env_page  # the API reference came from the docstrings
    assert (tmp_path / "site" / "reference" / "baselines" / "index.html").exists()


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = set(re.findall(r":\s*([\w/-]+\.md)\s*$", (ROOT / "docs/mkdocs.yml").read_text(), re.M))
    pages = {p.relative_to(PAGES).as_posix() for p in PAGES.rglob("*.md")}
    assert nav == pages


def test_every_python_example_compiles():
    for path in PAGES.rglob("*.md"):
        for k, block in enumerate(code_blocks(path.read_text(), "python")):
            compile(block, f"{path.name}:{k}", "exec")


@pytest.fixture
def guess_env():
    """The add-an-environment page's example, run; the registry restored afterwards."""
    (block, _table, _parts, _viewer) = code_blocks(page("guides/add-env.md"), "python")
    namespace: dict = {"__name__": "docs_example"}
    try:
        exec(compile(block, "add-env.md", "exec"), namespace)
        yield namespace
    finally:
        marl.core.registry._ENVS.pop("mine/guess", None)


def test_the_add_an_environment_example_passes_check_env(guess_env):
    env = guess_env["env"]
    assert env.spec.name == "mine/guess" and env.spec.num_agents == 3


def test_the_config_parts_example_names_keywords_of_the_family():
    """The page's `CONFIG_PARTS` table runs and groups keywords `Combat` takes, as combat's
    own table does."""
    from marl.envs import combat

    (_, block, _, _) = code_blocks(page("guides/add-env.md"), "python")
    namespace: dict = {"__name__": "docs_example"}
    exec(compile(block, "add-env.md:config_parts", "exec"), namespace)
    table = namespace["CONFIG_PARTS"]
    for name, part in table.items():
        assert combat.CONFIG_PARTS[name] == part, name


def test_the_parts_example_composes_a_battle_that_passes_check_env():
    """The page's battle composed of parts registers, builds and keeps the contract."""
    from marl.core.testing import check_env

    (_, _, block, _) = code_blocks(page("guides/add-env.md"), "python")
    namespace: dict = {"__name__": "docs_example"}
    try:
        exec(compile(block, "add-env.md:parts", "exec"), namespace)
        env = marl.make("mine/protoss5")
        assert env.spec.name == "mine/protoss5" and env.spec.num_agents == 10
        assert env.contest and env.reward.name == "magent"
        check_env(env, num_episodes=1)
    finally:
        marl.core.registry._ENVS.pop("mine/protoss5", None)


def test_the_viewer_example_clears_its_axes_and_draws_a_gif(guess_env, tmp_path, monkeypatch):
    """The viewer contract: `render_frame(state)` gives host values; `draw_frame` clears its
    axes, so a frame drawn over the last one is the frame drawn alone (no stale frames)."""
    import jax
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from marl.run.saved.render import render_episode, save_gif

    (_, _, _, block) = code_blocks(page("guides/add-env.md"), "python")
    viewer = types.ModuleType("my_pkg.guess_viewer")
    exec(compile(block, "add-env.md:viewer", "exec"), guess_env)
    viewer.draw_frame = guess_env["draw_frame"]
    monkeypatch.setitem(sys.modules, "my_pkg", types.ModuleType("my_pkg"))
    monkeypatch.setitem(sys.modules, "my_pkg.guess_viewer", viewer)
    env = guess_env["GuessWithViewer"](num_agents=2)
    states = render_episode(env, jax.random.key(0))
    frames = [env.render_frame(s) for s in states]
    assert len({f["target"] for f in frames}) > 1  # frames that differ

    def pixels(*drawn: dict) -> np.ndarray:
        fig = Figure(figsize=(2, 2))
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for frame in drawn:
            viewer.draw_frame(ax, frame, "t")
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())

    first, other = frames[0], next(f for f in frames if f["target"] != frames[0]["target"])
    assert np.array_equal(pixels(first, other), pixels(other))
    gif = save_gif(env, states, tmp_path / "guess.gif")
    assert gif.stat().st_size > 0


@pytest.mark.integration
def test_the_add_a_learner_example_runs():
    (block,) = code_blocks(page("guides/add-learner.md"), "python")
    namespace: dict = {"__name__": "docs_example"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, "add-learner.md", "exec"), namespace)
        result = namespace["result"]
        assert len(result.steps) >= 2 and np.all(np.isfinite(result.curve()))
        assert "ippo-wide" in marl.list_algorithms()
    finally:
        marl.core.registry._ALGORITHMS.pop("ippo-wide", None)


def test_entering_benchmark_v1_commands_are_the_cli_s():
    """The recipe's commands parse with `marl`'s own parser, train into the folder the
    leaderboard then reads beside v1's records, and write nothing into results/."""
    from marl.cli.parser import build_parser

    text = section(page("guides/leaderboard.md"), "Enter benchmark v1 with your learner")
    (block, *_) = code_blocks(text, "bash")
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert all(c[0] == "marl" for c in commands)
    parsed = [build_parser().parse_args(c[1:]) for c in commands]
    runs = [a for a in parsed if a.command == "benchmark"]
    assert {a.action for a in runs} >= {"status", "run"}
    assert all(a.name == "v1" and a.algo and a.records for a in runs)
    (board,) = [a for a in parsed if a.command == "leaderboard"]
    assert board.runs == ["results/benchmark/v1", runs[0].records]
    assert board.out and not Path(board.out).is_relative_to("results")


def test_plugins_depend_on_marls_distribution_name():
    pyproject = (ROOT / "pyproject.toml").read_text()
    (name,) = re.findall(r'^\[project\]\n(?:#.*\n)*name = "([^"]+)"', pyproject, re.M)
    for doc in ("guides/add-env.md", "guides/install.md"):
        declared = re.findall(r'dependencies = \["([^"]+)"\]', page(doc))
        assert declared and set(declared) == {name}, doc
    guides = "".join(p.read_text() for p in (PAGES / "guides").rglob("*.md"))
    assert 'dependencies = ["marl"]' not in guides  # the changelog says why it was wrong


def test_the_libraries_log_switch_is_the_code_s():
    from marl.learning import logs

    text = page("guides/logging.md")
    assert f"{logs.ENV_VAR}=INFO" in text
    assert all(f"`{name}`" in text for name in logs.LIBRARY_LOGGERS)


def test_every_repository_path_named_exists():
    """Scripts, results, configs and tests the pages and the README name are there (a path
    with a placeholder, or a prefix of files, counts when something matches it)."""
    pattern = r"\b(?:scripts|results|marl/conf|marl/results|tests)/[\w./-]*\w"
    texts = [p.read_text() for p in PAGES.rglob("*.md")] + [(ROOT / "README.md").read_text()]
    named = {m for text in texts for m in re.findall(pattern, text)}
    optional = {"results/external"}  # where other frameworks' records may be dropped
    missing = sorted(
        path
        for path in named - optional
        if not (ROOT / path).exists() and not list(ROOT.glob(re.sub(r"[A-Z]+", "*", path) + "*"))
    )
    assert len(named) > 20 and not missing, missing


def test_every_marl_command_in_the_pages_parses():
    """Each `marl ...` line of the pages' bash blocks is a command marl's parser takes (lines
    with placeholders such as `...` or `<dir>` left out)."""
    from marl.cli.parser import build_parser

    lines = []
    for path in PAGES.rglob("*.md"):
        for block in code_blocks(path.read_text(), "bash"):
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                line = re.sub(r"^[A-Z_]+=\S+ ", "", line.split("  #")[0].strip())
                if line.startswith("marl ") and "..." not in line and "<" not in line:
                    lines.append((path.name, line))
    assert len(lines) > 20
    for name, line in lines:
        args = shlex.split(line)[1:]
        try:
            build_parser().parse_args(args)
        except SystemExit as e:  # --version and --help exit 0
            if e.code != 0:
                pytest.fail(f"{name}: {line!r} does not parse (exit {e.code})")
