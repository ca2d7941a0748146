"""Combat's opponent modes (self-play, policy), the enemies' mirrored view, the viewer, and
the Hydra env configs of the combat family."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import marl
from marl import cli
from marl.core.learner import Policy
from marl.core.spaces import sample_actions
from marl.core.testing import check_env
from marl.envs.combat.enemies import mirror_moves
from marl.envs.combat.observation import obs_size
from marl.envs.combat.opponents import (
    heuristic_policy,
    mirror_env,
    self_play_policy,
    stop_policy,
)
from marl.envs.combat.reward import KILL_REWARD, REWARD_SCALE, WIN_REWARD
from marl.envs.combat.units import FIRST_ATTACK, STATS, STOP


# --- helpers ------------------------------------------------------------------------------
def play(env, policy: Policy, params=None, num_episodes: int = 100, seed: int = 0):
    """Per-episode (returns [E, num_agents], won [E], lost [E]) of `policy` acting for every
    agent, greedily, over whole episodes (vmapped, one jitted program)."""

    def episode(key):
        k_reset, key = jax.random.split(key)
        state, ts = env.reset(k_reset)

        def body(carry, k):
            state, ts, pc, start, done, ret, won, lost = carry
            k_act, k_step = jax.random.split(k)
            actions, pc = policy.act(params, ts.obs, ts.avail_actions, pc, start, k_act, True)
            state, ts = env.step(k_step, state, actions)
            ret = ret + jnp.where(done, 0.0, ts.reward)
            won = jnp.where(done, won, ts.metrics["won"])
            lost = jnp.where(done, lost, ts.metrics["lost"])
            return (state, ts, pc, jnp.zeros((), bool), done | ts.done, ret, won, lost), None

        zero = jnp.zeros(())
        ret = jnp.zeros((env.spec.num_agents,))
        carry = (state, ts, policy.initial_carry(), jnp.ones((), bool), jnp.zeros((), bool))
        carry = (*carry, ret, zero, zero)
        keys = jax.random.split(key, env.spec.episode_limit)
        (*_, done, ret, won, lost), _ = jax.lax.scan(body, carry, keys)
        return ret, won, lost, done

    keys = jax.random.split(jax.random.key(seed), num_episodes)
    ret, won, lost, done = jax.jit(jax.vmap(episode))(keys)
    assert np.asarray(done).all()
    return np.asarray(ret), np.asarray(won), np.asarray(lost)


def random_actions(env):
    """A jitted (key, state, ts) -> state, ts step with random valid actions."""

    @jax.jit
    def step(key, state, ts):
        k_act, k_step = jax.random.split(key)
        actions = sample_actions(k_act, env.spec.action_space, ts.avail_actions)
        return env.step(k_step, state, actions)

    return step


def _duel_state(env, ally_health: float, enemy_health: float):
    """3m: ally i at (10, 10 + 5i), enemy i 3 to its right (in range only of ally i)."""
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    allies = np.stack([np.full(3, 10.0), 10.0 + 5 * np.arange(3)], axis=1)
    pos = np.concatenate([allies, allies + np.array([3.0, 0.0])]).astype(np.float32)
    health = np.array([ally_health] * 3 + [enemy_health] * 3, np.float32)
    return state.replace(pos=jnp.asarray(pos), health=jnp.asarray(health))


# --- keywords and spec --------------------------------------------------------------------
def test_opponent_keywords_are_checked():
    with pytest.raises(ValueError, match="opponent.*heuristic, self_play, policy"):
        marl.make("combat/3m", opponent="scripted")
    with pytest.raises(ValueError, match="needs enemy_policy"):
        marl.make("combat/3m", opponent="policy")
    with pytest.raises(ValueError, match="only used with opponent='policy'"):
        marl.make("combat/3m", enemy_policy=stop_policy(3))
    with pytest.raises(TypeError, match="Policy"):
        marl.make("combat/3m", opponent="policy", enemy_policy=lambda: None)
    with pytest.raises(ValueError, match="enemy_shoots"):
        marl.make("combat/3m", opponent="self_play", enemy_shoots=False)


def test_self_play_spec_has_both_teams_padded():
    env = marl.make("combat/5m_vs_6m", opponent="self_play")
    spec = env.spec
    ally, enemy = 14 + 15 * 4 + 12 * 6, 14 + 15 * 5 + 12 * 5
    assert (obs_size(5, 6), obs_size(6, 5)) == (ally, enemy)
    assert spec.num_agents == 11 and spec.obs_dim == max(ally, enemy)
    assert spec.obs_sizes == (ally,) * 5 + (enemy,) * 6
    assert spec.action_dim == 5 + 6 and spec.action_sizes == (11,) * 5 + (10,) * 6
    assert [(g.name, g.agents) for g in spec.groups] == [
        ("allies", tuple(range(5))),
        ("enemies", tuple(range(5, 11))),
    ]
    assert spec.agent_names[4:6] == ("ally_4", "enemy_0")
    assert spec.state_dim == 10 * 11 + 4 * 11
    # heuristic and policy modes keep the allies-only spec
    policy = marl.make("combat/5m_vs_6m", opponent="policy", enemy_policy=stop_policy(6))
    assert policy.spec == marl.make("combat/5m_vs_6m").spec


# --- the contract -------------------------------------------------------------------------
@pytest.mark.parametrize("reward", ["smac", "magent"])
def test_check_env_self_play(reward):
    env = marl.make("combat/3m", opponent="self_play", reward=reward)
    assert check_env(env, num_episodes=1)["steps"] >= 1


def test_magent_reward_pays_each_unit_its_own():
    """1 marine vs 1 that does not shoot, the ally attacking every step: it earns -0.005 a
    step, -0.1 an attack action, +0.2 on each step it fires (the foe's health drops) and +5 for
    the kill, as MAgent's battle config; SMAC's default stays one team reward."""
    from marl.envs.combat.env import Combat

    env = Combat(allies="1m", map_size=4.0, enemy_shoots=False, reward="magent")
    assert not env.spec.shared_reward and marl.make("combat/3m").spec.shared_reward
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    step = jax.jit(env.step)
    steps = fired = 0
    total = 0.0
    while not bool(ts.terminated.any()):
        assert bool(ts.avail_actions[0, FIRST_ATTACK])  # the foe stays in range
        before = float(state.health[1])
        state, ts = step(jax.random.key(steps), state, jnp.array([FIRST_ATTACK]))
        steps, fired = steps + 1, fired + (float(state.health[1]) < before)
        total += float(ts.reward[0])
    assert float(state.health[1]) == 0.0 and 0 < fired <= steps
    assert total == pytest.approx(-0.005 * steps - 0.1 * steps + 0.2 * fired + 5.0, abs=1e-5)
    with pytest.raises(ValueError, match="unknown reward 'team'; valid: smac, magent"):
        Combat(reward="team")


def test_check_env_policy_mode():
    env = marl.make("combat/3m", opponent="policy", enemy_policy=heuristic_policy(3, 3))
    assert check_env(env, num_episodes=1)["steps"] >= 1


# --- the enemies' view is the allies' view of the mirrored map ----------------------------
@pytest.mark.parametrize("see", [pytest.param(False, marks=pytest.mark.slow), True])
def test_enemy_view_is_the_ally_view_of_the_mirrored_map(see):
    env = marl.make("combat/5m_vs_6m", opponent="self_play", see_enemy_actions=see)
    mirrored = mirror_env(env)
    assert (mirrored.num_allies, mirrored.num_enemies) == (6, 5)
    seen = (5 + 5 * 5) if see else 0  # each of 5 teammates' cooldown, 5 foes' action + cooldown
    assert mirrored.spec.obs_dim == obs_size(6, 5) + seen and mirrored.spec.action_dim == 5 + 5
    n, size = env.num_allies, env.map_size
    step = random_actions(env)
    state, ts = jax.jit(env.reset)(jax.random.key(4))
    swap = lambda x: jnp.concatenate([x[n:], x[:n]])  # noqa: E731

    @jax.jit  # one program, not a hundred eager ops
    def mirror_view(state):
        pos = swap(state.pos)
        other = state.replace(
            pos=jnp.stack([size - pos[:, 0], pos[:, 1]], axis=1),
            health=swap(state.health),
            cooldown=swap(state.cooldown),
            unit_type=swap(state.unit_type),
            last_action=mirror_moves(swap(state.last_action)),
        )
        return mirrored.observe(other)

    checked = 0
    for t in range(40):
        state, ts = step(jax.random.key(t), state, ts)
        if bool(ts.done):
            break
        expected = mirror_view(state)
        d = mirrored.spec.obs_dim
        np.testing.assert_allclose(ts.obs[n:, :d], expected.obs, atol=1e-5)
        assert not np.asarray(ts.obs[n:, d:]).any(), "enemy obs padding is zero"
        assert (np.asarray(ts.avail_actions[n:, :10]) == np.asarray(expected.avail_actions)).all()
        assert not np.asarray(ts.avail_actions[n:, 10:]).any()
        checked += 1
    assert checked >= 10
    # the view of a living enemy mirrors x: 1 - x / W
    live = int(np.argmax(np.asarray(state.alive[n:])))
    obs = np.asarray(env.view(state, "enemies")[0])
    assert obs[live, 2] == pytest.approx(1 - float(state.pos[n + live, 0]) / size, abs=1e-6)


def test_self_play_enemy_moves_are_mirrored_and_padding_does_nothing():
    env = marl.make("combat/5m_vs_6m", opponent="self_play")
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    n, u = 5, 11
    pos = np.stack([np.full(u, 16.0), 2.0 + 2.5 * np.arange(u)], axis=1)
    pos[n:, 0] = 28.0  # all far apart: nobody in range or overlapping
    pos[n + 1] = [20.0, 30.0]
    state = state.replace(pos=jnp.asarray(pos, jnp.float32))
    actions = np.full(u, STOP)
    actions[n] = 1  # enemy 0: east in its view = west in the world
    actions[n + 1] = 10  # enemy 1: padded action (would be "attack ally 5", an enemy)
    after, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.asarray(actions))
    moved = np.asarray(after.pos - state.pos)
    assert moved[n, 0] == pytest.approx(-STATS.velocity[0] * 0.5, abs=1e-5)
    assert int(after.last_action[n]) == 3 and int(after.last_action[n + 1]) == STOP
    assert (np.asarray(after.health) == 45).all()


def test_self_play_rewards_are_per_side():
    env = marl.make("combat/3m", opponent="self_play")
    state = _duel_state(env, 1.0, 45.0)  # the enemies kill the allies
    actions = jnp.array([STOP] * 3 + [FIRST_ATTACK, FIRST_ATTACK + 1, FIRST_ATTACK + 2])
    state, ts = jax.jit(env.step)(jax.random.key(1), state, actions)
    assert bool(ts.terminated) and float(ts.metrics["lost"]) == 1.0
    assert float(ts.metrics["won"]) == 0.0
    raw = 3 * 1.0 + 3 * KILL_REWARD + WIN_REWARD
    enemy = raw / (3 * 45.0 + 3 * KILL_REWARD + WIN_REWARD) * REWARD_SCALE
    np.testing.assert_allclose(ts.reward, [0.0] * 3 + [enemy] * 3, rtol=1e-5)
    assert ts.alive.shape == (6,) and not np.asarray(ts.alive[:3]).any()


# --- policy mode --------------------------------------------------------------------------
def test_stopping_enemy_policy_never_attacks():
    env = marl.make("combat/3m", opponent="policy", enemy_policy=stop_policy(3))
    allies = heuristic_policy(3, 3)

    @jax.jit
    def run(key):
        state, ts = env.reset(key)

        def body(carry, k):
            state, ts, pc, start = carry
            k_act, k_step = jax.random.split(k)
            actions, pc = allies.act(None, ts.obs, ts.avail_actions, pc, start, k_act, True)
            state, ts = env.step(k_step, state, actions)
            return (state, ts, pc, jnp.zeros((), bool)), (state.health, state.last_action, ts)

        carry = (state, ts, allies.initial_carry(), jnp.ones((), bool))
        return jax.lax.scan(body, carry, jax.random.split(key, env.spec.episode_limit))[1]

    for seed in range(3):
        health, last, ts = run(jax.random.key(seed))
        assert (np.asarray(health[:, :3]) == 45).all(), "an ally was hit"
        assert (np.asarray(last[:, 3:]) == STOP).all()
        assert np.asarray(ts.metrics["won"]).any(), "the allies win against a passive team"


def test_enemy_carry_lives_in_the_state_and_resets():
    seen = []

    def act(params, obs, avail, carry, start, key, greedy):
        assert obs.shape == (3, obs_size(3, 3)) and avail.shape == (3, 8)
        seen.append(greedy)
        return jnp.full((3,), STOP, jnp.int32), jnp.where(start, params, carry + 1)

    counting = Policy(lambda: jnp.array(-5, jnp.int32), act)
    env = marl.make(
        "combat/3m", opponent="policy", enemy_policy=counting, enemy_params=jnp.array(100)
    )
    step = random_actions(env)
    state, ts = env.reset(jax.random.key(0))
    assert int(state.enemy_carry) == -5
    for t in range(4):
        state, ts = step(jax.random.key(t), state, ts)
    assert int(state.enemy_carry) == 103, "params at the start, then +1 per step"
    state, _ = env.reset(jax.random.key(1))
    assert int(state.enemy_carry) == -5
    assert seen == [True], "greedy by default, traced once"


def _neighbourhood_recorder(m: int) -> Policy:
    """A mean-field-style policy that stops and keeps the neighbourhood it got as its carry."""

    def act(params, obs, avail, carry, start, key, greedy, neighbours):
        return jnp.full((m,), STOP, jnp.int32), neighbours

    return Policy(lambda: jnp.zeros((m, m)), act, neighbourhood=True)


def test_mean_field_opponents_get_their_side_of_the_neighbourhood():
    """An enemy policy (or a self-play side) that averages over neighbours gets the enemies'
    own neighbourhood, the self-play env's block for them: living enemies within sight, not
    every other agent (the mean-field policies' fallback when none is passed)."""
    sp = marl.make("combat/5m_vs_6m", opponent="self_play")
    env = marl.make("combat/5m_vs_6m", opponent="policy", enemy_policy=_neighbourhood_recorder(6))
    state, _ = jax.jit(env.reset)(jax.random.key(3))
    state = state.replace(health=state.health.at[7].set(0.0))  # one enemy dead
    block = np.asarray(sp.neighbourhood(state)[5:, 5:])
    assert block[:, 2].sum() == 0 and block[2].sum() == 0 and block.sum() > 0
    np.testing.assert_array_equal(env.enemy_neighbourhood(state), block)
    after, _ = jax.jit(env.step)(jax.random.key(0), state, jnp.full((5,), STOP, jnp.int32))
    np.testing.assert_array_equal(after.enemy_carry, block)

    both = self_play_policy(sp, _neighbourhood_recorder(5), _neighbourhood_recorder(6))
    assert both.neighbourhood
    _, (ally_seen, enemy_seen) = both.act(
        (None, None),
        jnp.zeros((11, sp.spec.obs_dim)),  # the recorders read only the neighbourhood
        jnp.ones((11, sp.spec.action_dim), bool),
        both.initial_carry(),
        jnp.array(False),
        jax.random.key(0),
        True,
        neighbours=sp.neighbourhood(state),
    )
    np.testing.assert_array_equal(enemy_seen, block)
    np.testing.assert_array_equal(ally_seen, sp.neighbourhood(state)[:5, :5])


def test_a_recurrent_learner_trained_on_the_mirrored_map_drives_the_enemies():
    from marl.algorithms.ppo import Networks, PPOConfig, make_policy

    env = marl.make("combat/5m_vs_6m")
    cfg = PPOConfig(recurrent=True, gru_hidden=8, hidden=(16, 16))
    nets = Networks(mirror_env(env), cfg)
    params, _ = nets.init(jax.random.key(0))
    for greedy in (True, False):
        enemy = marl.make(
            "combat/5m_vs_6m",
            opponent="policy",
            enemy_policy=make_policy(nets),
            enemy_params=params,
            enemy_greedy=greedy,
        )
        step = random_actions(enemy)
        state, ts = jax.jit(enemy.reset)(jax.random.key(0))
        assert state.enemy_carry.shape == (6, 8) and not np.asarray(state.enemy_carry).any()
        state, ts = step(jax.random.key(1), state, ts)
        assert np.asarray(state.enemy_carry).any(), "the GRU carry advanced"
        assert ts.obs.shape == (5, enemy.spec.obs_dim)


@pytest.mark.slow
def test_heuristic_policy_reproduces_the_heuristic_mode_win_rate():
    allies = heuristic_policy(3, 3)
    heuristic = marl.make("combat/3m")
    policy = marl.make("combat/3m", opponent="policy", enemy_policy=heuristic_policy(3, 3))
    _, won_h, lost_h = play(heuristic, allies, num_episodes=100)
    _, won_p, lost_p = play(policy, allies, num_episodes=100)
    assert 0.3 <= won_h.mean() <= 0.7  # the mirrored heuristic wins about half (0.56)
    assert abs(won_h.mean() - won_p.mean()) <= 0.1
    assert abs(lost_h.mean() - lost_p.mean()) <= 0.1
    # measured: the same 100 episodes (same keys) play out identically in both modes
    assert (won_h == won_p).mean() >= 0.9


# --- self-play symmetry -------------------------------------------------------------------
def test_self_play_is_mirror_symmetric_under_the_same_heuristic():
    env = marl.make("combat/3m", opponent="self_play")
    both = self_play_policy(env, heuristic_policy(3, 3), heuristic_policy(3, 3))
    ret, won, lost = play(env, both, params=(None, None), num_episodes=64)
    assert (ret[:, :3] == ret[:, :1]).all() and (ret[:, 3:] == ret[:, 3:4]).all()
    ally, enemy = ret[:, 0], ret[:, 3]
    assert ally.min() >= 0 and max(ally.max(), enemy.max()) <= REWARD_SCALE + 1e-4
    # measured over 3 seeds: won 0.45-0.55, mean returns 12.7-14.1 a side, gap <= 1.3 (sd 1.6)
    gap = abs(ally.mean() - enemy.mean())
    assert gap <= 3 * np.std(ally - enemy) / np.sqrt(len(ally)) + 0.5, (ally.mean(), enemy.mean())
    assert 0.3 <= won.mean() <= 0.7 and 0.3 <= lost.mean() <= 0.7
    assert abs(won.mean() - lost.mean()) <= 0.25
    assert not (won.astype(bool) & lost.astype(bool)).any()


# --- the viewer ---------------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize("sets", [[], ["--set", "opponent=self_play"]])
def test_render_writes_a_combat_gif(tmp_path, capsys, sets):
    out = tmp_path / "battle.gif"
    assert cli.main(["render", "combat/3m", "--out", str(out), "--steps", "5", *sets]) == 0
    assert out.exists() and out.stat().st_size > 0
    assert "6 frames" in capsys.readouterr().out


def test_render_frame_marks_attacks_and_the_dead():
    env = marl.make("combat/3m")
    state = _duel_state(env, 45.0, 45.0)
    state = state.replace(
        health=state.health.at[2].set(0.0),
        last_action=jnp.array([FIRST_ATTACK, STOP, STOP, FIRST_ATTACK, 0, FIRST_ATTACK]),
    )
    frame = env.render_frame(state)
    # ally 0 and enemy 0 hit each other (3 apart); enemy 2 targets ally 0, out of its reach
    assert frame["target"].tolist() == [3, -1, -1, 0, -1, -1]
    assert frame["alive"].tolist() == [True, True, False, True, True, True]
    assert frame["team"].tolist() == [0, 0, 0, 1, 1, 1]
    assert frame["map_size"] == env.map_size
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from marl.envs.combat.viewer import draw_frame

    fig = Figure()
    FigureCanvasAgg(fig)
    draw_frame(fig.add_subplot(), frame, "t=0")
    fig.canvas.draw()


# --- parts ------------------------------------------------------------------------------------
def test_a_battle_composed_of_parts_plays_as_its_keywords():
    """`Combat.from_parts` (generator, reward, opponent) builds the env the flat keywords
    build: the same spec and the same rollout under the same keys."""
    from marl.envs.combat import (
        BattleGenerator,
        Combat,
        HeuristicOpponent,
        MagentReward,
        SelfPlayOpponent,
    )

    for keywords, parts in [
        (
            {"allies": "3m", "attack_mode": "weakest", "reward": "magent"},
            {"reward": MagentReward(), "opponent": HeuristicOpponent("weakest")},
        ),
        ({"allies": "2s3z", "opponent": "self_play"}, {"opponent": SelfPlayOpponent()}),
    ]:
        flat = Combat(**keywords)
        composed = Combat.from_parts(flat.generator, **parts)
        assert composed.spec == flat.spec and composed.opponent == flat.opponent
        assert (composed.observer, composed.dynamics) == (flat.observer, flat.dynamics)
        assert isinstance(flat.reward, type(composed.reward))
        assert isinstance(flat.generator, BattleGenerator)
        key = jax.random.key(3)
        # each env's reset and step as one program (op by op, they compiled every primitive)
        (reset1, step1), (reset2, step2) = (
            (jax.jit(env.reset), jax.jit(env.step)) for env in (flat, composed)
        )
        (s1, t1), (s2, t2) = reset1(key), reset2(key)
        for k in jax.random.split(key, 5):
            actions = jax.random.randint(k, (flat.spec.num_agents,), 0, flat.spec.action_dim)
            (s1, t1), (s2, t2) = step1(k, s1, actions), step2(k, s2, actions)
            np.testing.assert_array_equal(t1.obs, t2.obs)
            np.testing.assert_array_equal(t1.reward, t2.reward)
    with pytest.raises(ValueError, match="unknown attack_mode 'nope'"):
        HeuristicOpponent("nope")


def test_the_parts_never_import_the_env_and_the_modules_form_no_cycle():
    """Each part takes the state and its own settings: among the combat modules only `opponents`
    (the mirrored map) and the package import `env`, and no import, TYPE_CHECKING or
    function-local, closes a cycle; no module passes 400 lines."""
    import ast
    from pathlib import Path

    import marl.envs.combat as package

    folder = Path(package.__file__).parent
    graph = {}
    for path in folder.glob("*.py"):
        found = set()  # `from .x import y` and `from . import x`, wherever they stand
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                names = [node.module] if node.module else [a.name for a in node.names]
                found |= {name.split(".")[0] for name in names}
        graph[path.stem] = found - {path.stem}
        assert len(path.read_text().splitlines()) <= 400, path.name
    assert {m for m, deps in graph.items() if "env" in deps} == {"__init__", "opponents"}
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, f"import cycle: {' -> '.join((*trail, module))}"
        if module not in done:
            for dep in sorted(graph.get(module, ())):
                visit(dep, (*trail, module))
            done.add(module)

    for module in sorted(graph):
        visit(module, ())
