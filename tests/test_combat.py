"""The combat family: contract, physics invariants, rules on hand-built states, the generator,
and sanity statistics against the scripted enemy."""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_envs import FAMILY_CORE

import marl
from marl.core.spaces import sample_actions
from marl.core.testing import check_env
from marl.envs.combat import heuristic_actions, initial_memory, parse_composition
from marl.envs.combat.dynamics import SUBSTEP_TIME, SUBSTEPS
from marl.envs.combat.reward import KILL_REWARD, REWARD_SCALE, WIN_REWARD
from marl.envs.combat.scenarios import draw_unit_types, start_positions
from marl.envs.combat.units import FIRST_ATTACK, MOVE_VECTORS, STATS, STOP, UNIT_NAMES, unit_type

COMBAT_IDS = marl.list_envs("combat")
# check_env compiles ~50 programs per id: tests/test_envs.py checks these few by default, the
# others run here with `-m slow`.
CORE_IDS = FAMILY_CORE["combat"]

# SMAC's episode limits (shared/REFERENCES.md) and SMACv2's 10gen_* limit.
EXPECTED = {
    "3m": (3, 3, 60),
    "8m": (8, 8, 120),
    "25m": (25, 25, 150),
    "5m_vs_6m": (5, 6, 70),
    "8m_vs_9m": (8, 9, 120),
    "10m_vs_11m": (10, 11, 150),
    "27m_vs_30m": (27, 30, 180),
    "2s3z": (5, 5, 120),
    "3s5z": (8, 8, 150),
    "3s5z_vs_3s6z": (8, 9, 170),
    "3s_vs_5z": (3, 5, 250),
    "6h_vs_8z": (6, 8, 150),
    "smacv2_5_units": (5, 5, 200),
    "smacv2_10_units": (10, 10, 200),
    "smacv2_20_units": (20, 20, 200),
    "smacv2_10_vs_11": (10, 11, 200),
    "smacv2_20_vs_23": (20, 23, 200),
    "64m_vs_64m": (64, 64, 200),
    "battle64": (64, 64, 200),
    "custom": (3, 3, 60),
}
LOCAL = {"battle64": 8}  # ids with a local view: the nearest k teammates and foes


# --- the contract -------------------------------------------------------------------------
# the core ids pass the contract in tests/test_envs.py; every other map with `-m slow`
@pytest.mark.slow
@pytest.mark.parametrize("env_id", [i for i in COMBAT_IDS if i not in CORE_IDS])
def test_check_env(env_id):
    report = check_env(marl.make(env_id), num_episodes=1)
    assert report["steps"] >= 1


def test_registered_ids_have_smac_sizes_and_limits():
    assert sorted(COMBAT_IDS) == sorted(f"combat/{m}" for m in EXPECTED)
    for name, (n, m, limit) in EXPECTED.items():
        env = marl.make(f"combat/{name}")
        spec, k = env.spec, LOCAL.get(name)
        mates, foes = (n - 1, m) if k is None else (min(k, n - 1), min(k, m))
        assert env.slots() == (mates, foes)
        sizes = (spec.num_agents, env.num_enemies, spec.action_dim - FIRST_ATTACK)
        assert (*sizes, spec.episode_limit) == (n, m, foes, limit), name
        assert spec.name == f"combat/{name}"
        assert [g.name for g in spec.groups] == ["allies"]
        assert spec.obs_dim == 14 + 15 * mates + 12 * foes
        assert spec.state_dim == 10 * (n + m) + 4 * n  # no time: the limit truncates


def test_compositions_and_keywords():
    assert parse_composition("3s5z") == (2,) * 3 + (3,) * 5
    assert parse_composition("6h2zg1M") == (5,) * 6 + (4,) * 2 + (1,)
    assert parse_composition(["marine", "zealot"]) == (0, 3)
    for bad in ["", "3x", "m3", "3s 5z"]:
        with pytest.raises(ValueError):
            parse_composition(bad)
    with pytest.raises(ValueError, match="count"):
        marl.make("combat/3m", allies=5)
    with pytest.raises(ValueError, match="count"):
        marl.make("combat/smacv2_5_units", allies="5m")
    with pytest.raises(ValueError, match="attack_mode"):
        marl.make("combat/3m", attack_mode="nearest")
    with pytest.raises(ValueError, match="start_positions"):
        marl.make("combat/3m", start_positions="random")
    env = marl.make("combat/3m", allies="2s3z", enemies="5z")
    assert (env.num_allies, env.num_enemies) == (5, 5)


@pytest.mark.parametrize(
    "env_id,kwargs",
    [
        ("combat/custom", {"allies": "64m", "enemies": "64m"}),
        ("combat/smacv2_5_units", {"allies": 64, "enemies": 64, "race": "terran"}),
    ],
)
def test_64_vs_64_battle_steps_under_jit(env_id, kwargs):
    env = marl.make(env_id, **kwargs)
    assert env.spec.num_agents == 64 and env.spec.action_dim == 5 + 64

    def advance(carry, key):
        state, ts = carry
        k_act, k_step = jax.random.split(key)
        actions = sample_actions(k_act, env.spec.action_space, ts.avail_actions)
        return env.step(k_step, state, actions), None

    @jax.jit
    def run(key):
        k_reset, key = jax.random.split(key)
        carry, _ = jax.lax.scan(advance, env.reset(k_reset), jax.random.split(key, 5))
        return carry

    state, ts = run(jax.random.key(0))
    assert int(state.t) == 5
    assert ts.obs.shape == (64, env.spec.obs_dim)
    assert np.isfinite(np.asarray(ts.obs)).all()
    pos = np.asarray(state.pos)
    assert pos.min() >= 0 and pos.max() <= env.map_size


# --- invariants over random seeds and actions ---------------------------------------------
@functools.cache
def random_rollout(env_id: str):
    """(env, jitted (key, p_valid) -> (reset state, reset TimeStep, states [T], TimeSteps [T]))
    over T = episode_limit steps without auto-reset; each action is valid with probability
    p_valid, else uniform over all actions (unavailable ones included)."""
    env = marl.make(env_id)
    n, a = env.spec.num_agents, env.spec.action_dim

    def run(key, p_valid):
        k_reset, key = jax.random.split(key)
        state, ts = env.reset(k_reset)

        def body(carry, k):
            state, ts = carry
            k_valid, k_any, k_pick, k_step = jax.random.split(k, 4)
            valid = sample_actions(k_valid, env.spec.action_space, ts.avail_actions)
            anything = jax.random.randint(k_any, (n,), 0, a)
            actions = jnp.where(jax.random.uniform(k_pick, (n,)) < p_valid, valid, anything)
            state, ts = env.step(k_step, state, actions)
            return (state, ts), (state, ts)

        keys = jax.random.split(key, env.spec.episode_limit)
        _, (states, tss) = jax.lax.scan(body, (state, ts), keys)
        return state, ts, states, tss

    return env, jax.jit(run)


def _stack(first, rest):
    return jax.tree.map(
        lambda x, y: np.concatenate([np.asarray(x)[None], np.asarray(y)]), first, rest
    )


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    env_id=st.sampled_from(["combat/3m", "combat/smacv2_5_units"]),
    seed=st.integers(0, 2**31 - 1),
    p_valid=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_invariants_over_random_seeds_and_actions(env_id, seed, p_valid):
    env, run = random_rollout(env_id)
    n, limit, size = env.num_allies, env.spec.episode_limit, env.map_size
    s0, ts0, states, tss = run(jax.random.key(seed), p_valid)
    s = _stack(s0, states)  # [T + 1, ...]
    ts = _stack(ts0, tss)
    done = ts.terminated | ts.truncated
    end = int(np.argmax(done)) if done.any() else None
    assert end is not None, "no episode end within the limit"
    assert end <= limit and int(s.t[end]) == end
    assert not (ts.terminated & ts.truncated).any()
    assert not ts.truncated[:limit].any() and (ts.truncated[limit] or ts.terminated[end])
    assert ts.terminated[end] or end == limit

    pos, health, alive = s.pos, s.health, s.health > 0
    assert (pos >= 0).all() and (pos <= size).all(), "a unit left the map"
    assert (np.diff(health, axis=0) <= 0).all(), "health increased"
    dead_before = ~alive[:-1]
    assert (pos[1:][dead_before] == pos[:-1][dead_before]).all(), "a dead unit moved"

    avail = ts.avail_actions
    dead_ally = ~alive[:, :n]
    assert (avail[dead_ally][:, STOP]).all() and avail[dead_ally].sum() == dead_ally.sum()
    assert (ts.obs[dead_ally] == 0).all(), "a dead agent observes"
    assert (ts.alive == alive[:, :n]).all()
    reach = STATS.attack_range[s.unit_type[:, :n]][..., None]  # [T, N, 1]
    dist = np.linalg.norm(pos[:, None, n:] - pos[:, :n, None], axis=-1)  # [T, N, M]
    expected = alive[:, :n, None] & alive[:, None, n:] & (dist < reach)
    clear = np.abs(dist - reach) > 1e-4  # float32 ties at the range boundary are ambiguous
    assert (avail[..., FIRST_ATTACK:] == expected)[clear].all(), "attack mask != range"
    assert avail[~dead_ally][:, :STOP].all()

    won = ts.metrics["won"] > 0
    assert (~alive[won][:, n:]).all() and alive[won][:, :n].any(axis=1).all()
    if ts.terminated[end]:
        assert ts.metrics["won"][end] or not alive[end, :n].any()
    episode_return = ts.reward[1 : end + 1, 0].sum()
    assert 0 <= episode_return <= REWARD_SCALE + 1e-4
    assert (ts.reward == ts.reward[..., :1]).all(), "allies share the reward"


# --- rules on hand-built states -----------------------------------------------------------
def _duel_state(env, ally_health: float, enemy_health: float):
    """3m: ally i at (10, 10 + 5i), enemy i 3 to its right (in range only of ally i)."""
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    allies = np.stack([np.full(3, 10.0), 10.0 + 5 * np.arange(3)], axis=1)
    pos = np.concatenate([allies, allies + np.array([3.0, 0.0])]).astype(np.float32)
    health = np.array([ally_health] * 3 + [enemy_health] * 3, np.float32)
    return state.replace(pos=jnp.asarray(pos), health=jnp.asarray(health))


def test_terminated_and_won_when_all_enemies_die():
    env = marl.make("combat/3m")
    state = _duel_state(env, 45.0, 1.0)
    ts = env.observe(state)
    assert (np.asarray(ts.avail_actions[:, FIRST_ATTACK:]) == np.eye(3, dtype=bool)).all()
    state, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.array([5, 6, 7]))
    assert bool(ts.terminated) and not bool(ts.truncated)
    assert float(ts.metrics["won"]) == 1.0 and float(ts.metrics["lost"]) == 0.0
    assert float(ts.metrics["enemies_killed"]) == 1.0
    raw = 3 * 1.0 + 3 * KILL_REWARD + WIN_REWARD
    max_raw = 3 * 45.0 + 3 * KILL_REWARD + WIN_REWARD
    np.testing.assert_allclose(ts.reward, raw / max_raw * REWARD_SCALE, rtol=1e-5)
    assert (np.asarray(state.health[:3]) < 45).all(), "the enemies fired back in the same step"


def test_mutual_destruction_is_not_a_win():
    env = marl.make("combat/3m")
    state = _duel_state(env, 1.0, 1.0)
    state, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.array([5, 6, 7]))
    assert not np.asarray(state.alive).any()
    assert bool(ts.terminated)
    assert float(ts.metrics["won"]) == 0.0 and float(ts.metrics["lost"]) == 0.0
    raw = 3 * 1.0 + 3 * KILL_REWARD  # no win bonus
    np.testing.assert_allclose(ts.reward, raw / (3 * 45.0 + 3 * KILL_REWARD + WIN_REWARD) * 20)
    assert not np.asarray(ts.obs).any() and (np.asarray(ts.avail_actions).sum(1) == 1).all()


def test_weapon_cooldown_after_a_shot_has_smax_jitter():
    """A marine firing on the first sub-step resets its cooldown to 0.61 + U(-1/16, 2/16), then
    runs 7 sub-steps of 1/16 down: it ends in [0.11, 0.2975), a different value per draw (not
    the jitter-free 0.1725); units that did not fire keep cooldown 0."""
    env = marl.make("combat/3m")
    state = _duel_state(env, 45.0, 45.0)
    actions = jnp.array([5, 6, 7, STOP, STOP, STOP], jnp.int32)  # ally i shoots enemy i
    simulate = jax.jit(env.dynamics)  # the world part: (state after, shots, kills)
    cooldowns = []
    for seed in range(4):
        after = simulate(jax.random.key(seed), state, actions)[0]
        health, cooldown = after.health, after.cooldown
        np.testing.assert_allclose(health, [45.0] * 3 + [36.0] * 3)  # one shot each
        cooldown = np.asarray(cooldown)
        assert (cooldown[3:] == 0).all(), "the enemies did not fire"
        late = 0.61 - (SUBSTEPS - 1) * SUBSTEP_TIME  # reset at sub-step 0, then 7 run down
        low, high = late - SUBSTEP_TIME - 1e-6, late + 2 * SUBSTEP_TIME + 1e-6
        assert ((cooldown[:3] >= low) & (cooldown[:3] <= high)).all(), cooldown
        cooldowns.append(cooldown[:3])
    cooldowns = np.concatenate(cooldowns)
    assert len(np.unique(cooldowns)) == len(cooldowns), "the cooldown reset has no jitter"


def test_truncated_exactly_at_the_limit_when_nobody_dies():
    env = marl.make("combat/3m", enemy_shoots=False, episode_limit=13)
    stop = jnp.full((3,), STOP, jnp.int32)

    def run(key):
        state, _ = env.reset(key)

        def body(state, k):
            state, ts = env.step(k, state, stop)
            return state, (ts.terminated, ts.truncated, state.t)

        return jax.lax.scan(body, state, jax.random.split(key, 20))

    state, (terminated, truncated, t) = jax.jit(run)(jax.random.key(3))
    assert (np.asarray(state.health) == 45).all()
    assert not np.asarray(terminated).any()
    assert np.asarray(t)[12] == 13
    assert not np.asarray(truncated)[:12].any() and bool(truncated[12])


def test_observation_layout_on_a_hand_built_state():
    env = marl.make("combat/3m")
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    pos = [[10, 10], [10, 15], [14, 14], [13, 10], [16, 13], [10, 25]]
    health = [45.0, 0.0, 45.0, 45.0, 9.0, 45.0]  # ally 1 dead, enemy 1 hurt
    state = state.replace(pos=jnp.asarray(pos, jnp.float32), health=jnp.asarray(health))
    ts = env.observe(state)
    obs = np.asarray(ts.obs)
    sight, size = 9.0, env.map_size
    own = obs[0, :14]
    np.testing.assert_allclose(own[:4], [1.0, 0.0, 10 / size, 10 / size])
    assert own[4] == 1 and own[5:10].sum() == 0  # marine
    assert (own[10:] == 0).all()  # last action: stop
    ally_1, ally_2 = obs[0, 14:29], obs[0, 29:44]
    assert not ally_1.any(), "a dead ally is invisible"
    d2 = np.hypot(4, 4) / sight
    np.testing.assert_allclose(ally_2[:6], [1, 4 / sight, 4 / sight, d2, 1, 1], rtol=1e-6)
    enemies = obs[0, 44:].reshape(3, 12)
    np.testing.assert_allclose(enemies[0, :6], [1, 3 / sight, 0, 3 / sight, 1, 1], rtol=1e-6)
    d1 = np.hypot(6, 3) / sight
    np.testing.assert_allclose(enemies[1, :6], [1, 6 / sight, 3 / sight, d1, 0.2, 0], rtol=1e-6)
    assert enemies[1, 6] == 1 and enemies[1, 7:].sum() == 0  # marine
    assert not enemies[2].any(), "enemy 2 is beyond sight (distance 15)"
    assert not obs[1].any(), "a dead agent observes nothing"
    avail = np.asarray(ts.avail_actions)
    assert avail[1].tolist() == [False] * 4 + [True] + [False] * 3
    assert avail[0].tolist() == [True] * 5 + [True, False, False]
    assert float(ts.metrics["damage_dealt"]) == pytest.approx(36 / 135)
    assert float(ts.metrics["allies_alive"]) == pytest.approx(2 / 3)
    assert float(ts.metrics["won"]) == 0.0


def test_see_enemy_actions_appends_smax_features_on_a_hand_built_state():
    plain, seeing = marl.make("combat/3m"), marl.make("combat/3m", see_enemy_actions=True)
    assert seeing.spec.obs_dim == plain.spec.obs_dim + 2 * 1 + 3 * 5 == 97
    state, _ = jax.jit(plain.reset)(jax.random.key(0))
    pos = [[10, 10], [10, 15], [14, 14], [13, 10], [16, 13], [10, 25]]
    health = [45.0, 0.0, 45.0, 45.0, 9.0, 45.0]  # ally 1 dead, enemy 1 hurt
    cooldown = [0.0, 0.3, 0.305, 0.61, 0.0, 0.61]
    # enemy 0 attacked ally 2 (5 + 2), enemy 1 moved west, enemy 2 (unseen) attacked ally 0
    last = [STOP, STOP, 1, FIRST_ATTACK + 2, 3, FIRST_ATTACK]
    state = state.replace(
        pos=jnp.asarray(pos, jnp.float32),
        health=jnp.asarray(health),
        cooldown=jnp.asarray(cooldown, jnp.float32),
        last_action=jnp.asarray(last, jnp.int32),
    )
    base, obs = np.asarray(plain.observe(state).obs), np.asarray(seeing.observe(state).obs)
    np.testing.assert_array_equal(obs[:, :80], base)  # the plain layout comes first, unchanged
    extra = obs[0, 80:]
    np.testing.assert_allclose(extra[:2], [0.0, 0.5], rtol=1e-6)  # ally 1 dead; ally 2 cooling
    foes = extra[2:].reshape(3, 5)
    np.testing.assert_allclose(foes[0], [0, 0, 1, 3 / 3, 1.0], rtol=1e-6)  # attacking ally 2
    np.testing.assert_allclose(foes[1], [-1, 0, 0, 0, 0.0], atol=1e-6)  # moved west
    assert not foes[2].any(), "enemy 2 is beyond sight"
    assert not obs[1].any(), "a dead agent observes nothing"


def test_check_env_with_smax_features_in_a_local_view():
    env = marl.make("combat/3m", see_enemy_actions=True, nearest=2)
    assert env.spec.obs_dim == 14 + 15 * 2 + 12 * 2 + 2 * 1 + 2 * 5
    assert check_env(env, num_episodes=1)["steps"] >= 1


def test_local_view_keeps_the_nearest_and_attacks_by_slot():
    full, local = marl.make("combat/3m"), marl.make("combat/3m", nearest=2)
    assert local.slots() == (2, 2) and local.spec.obs_dim == 14 + 15 * 2 + 12 * 2
    state, _ = jax.jit(full.reset)(jax.random.key(0))
    pos = [[10, 10], [10, 15], [14, 14], [15, 10], [12, 11], [10, 25]]
    health = [45.0, 0.0, 45.0, 45.0, 45.0, 45.0]  # ally 1 dead; enemy 1 nearer than enemy 0
    state = state.replace(pos=jnp.asarray(pos, jnp.float32), health=jnp.asarray(health))
    seen, near = np.asarray(full.observe(state).obs), local.observe(state)
    obs, avail = np.asarray(near.obs), np.asarray(near.avail_actions)
    np.testing.assert_array_equal(obs[0, :14], seen[0, :14])
    np.testing.assert_array_equal(obs[0, 14:29], seen[0, 29:44])  # ally 2 (visible) first
    assert not obs[0, 29:44].any()  # the second slot: ally 1, dead
    foes = seen[0, 44:].reshape(3, 12)
    np.testing.assert_array_equal(obs[0, 44:].reshape(2, 12), foes[[1, 0]])  # nearest first
    assert avail[0].tolist() == [True] * 5 + [True, False]  # only enemy 1 is in range
    actions = jnp.asarray([FIRST_ATTACK, STOP, STOP])  # ally 0 attacks its slot 0: enemy 1
    after, _ = jax.jit(local.step)(jax.random.key(1), state, actions)
    hit = np.asarray(after.health) < np.asarray(state.health)
    assert hit.tolist()[3:] == [False, True, False]
    assert int(after.last_action[0]) == FIRST_ATTACK + 1  # world frame: enemy 1


def test_local_view_with_every_unit_replays_the_full_view():
    """nearest >= every unit: the same battle as the full view, with observation rows and
    attack targets permuted (matched by their features)."""
    full, local = marl.make("combat/2s3z"), marl.make("combat/2s3z", nearest=8)
    first = 14 + 15 * 4

    def advance(carry, key):
        s_full, s_local, ts = carry
        k_act, k_step = jax.random.split(key)
        slot_actions = sample_actions(k_act, local.spec.action_space, ts.avail_actions)
        seen = full.observe(s_full).obs[:, first:].reshape(5, 5, 12)
        near = ts.obs[:, first:].reshape(5, 5, 12)
        gap = jnp.sum(jnp.abs(near[:, :, None] - seen[:, None]), axis=-1)  # [N, slot, foe]
        target = jnp.argmin(gap, axis=-1)  # the foe whose row each slot shows
        slot = jnp.clip(slot_actions - FIRST_ATTACK, 0, 4)
        world = jnp.where(
            slot_actions >= FIRST_ATTACK,
            FIRST_ATTACK + jnp.take_along_axis(target, slot[:, None], 1)[:, 0],
            slot_actions,
        )
        s_full, _ = full.step(k_step, s_full, world)
        s_local, ts = local.step(k_step, s_local, slot_actions)
        return (s_full, s_local, ts), jnp.max(jnp.abs(s_full.health - s_local.health))

    @jax.jit
    def run(key):
        s_full, _ = full.reset(key)
        s_local, ts = local.reset(key)
        carry = (s_full, s_local, ts)
        (_, _, ts), gaps = jax.lax.scan(advance, carry, jax.random.split(key, 60))
        return jnp.max(gaps), ts.metrics["damage_dealt"]

    damage = []
    for seed in range(3):
        gap, dealt = run(jax.random.key(seed))
        assert float(gap) == 0.0
        damage.append(float(dealt))
    assert max(damage) > 0.1  # the agents did attack (through the slot mapping)


def test_unit_stats_are_smax_defaults():
    smax_env = pytest.importorskip("jaxmarl.environments.smax.smax_env")
    defaults = inspect.signature(smax_env.SMAX).parameters
    assert list(defaults["unit_type_names"].default) == list(UNIT_NAMES)
    for ours, theirs in [
        ("velocity", "unit_type_velocities"),
        ("damage", "unit_type_attacks"),
        ("attack_range", "unit_type_attack_ranges"),
        ("sight_range", "unit_type_sight_ranges"),
        ("radius", "unit_type_radiuses"),
        ("health", "unit_type_health"),
        ("cooldown", "unit_type_weapon_cooldowns"),
    ]:
        np.testing.assert_allclose(getattr(STATS, ours), defaults[theirs].default, err_msg=ours)
    assert defaults["world_steps_per_env_step"].default == SUBSTEPS
    assert defaults["time_per_step"].default == SUBSTEP_TIME


@pytest.mark.parametrize("env_id", ["combat/2s3z", "combat/6h_vs_8z"])
def test_world_step_matches_jaxmarl_smax(env_id):
    """One env step of the world (all units' actions given) equals JaxMARL SMAX's (walls not
    lethal): positions and health exactly, from a state where the teams are within range."""
    smax_module = pytest.importorskip("jaxmarl.environments.smax")
    env = marl.make(env_id)
    name = env_id.split("/")[1]
    smax = smax_module.SMAX(
        scenario=smax_module.map_name_to_scenario(name), walls_cause_death=False
    )
    n, m = env.num_allies, env.num_enemies
    simulate, decode = jax.jit(env.dynamics), jax.jit(smax._decode_discrete_actions)
    rng = np.random.default_rng(0)
    fired = 0
    for trial in range(8):
        key = jax.random.key(trial)
        state, _ = jax.jit(env.reset)(key)
        pos = np.asarray(state.pos).copy()
        pos[n:] = pos[rng.integers(0, n, m)] + rng.uniform(1, 5, (m, 2)) * [1, 0.3]
        state = state.replace(pos=jnp.asarray(pos))
        actions = rng.integers(0, FIRST_ATTACK + np.where(np.arange(n + m) < n, m, n))
        reference = smax_module.smax_env.State(
            unit_positions=state.pos,
            unit_alive=state.alive,
            unit_teams=jnp.asarray(np.arange(n + m) >= n, jnp.float32),
            unit_health=state.health,
            unit_types=state.unit_type,
            unit_weapon_cooldowns=state.cooldown,
            prev_movement_actions=jnp.zeros((n + m, 2)),
            prev_attack_actions=jnp.zeros((n + m,), jnp.int32),
            step=jnp.array(0),
            done=jnp.array(False),
        )
        # SMAX numbers an enemy's targets in reverse: its attack 5 + k hits ally n - 1 - k
        smax_actions = actions.copy()
        attack = (np.arange(n + m) >= n) & (actions >= FIRST_ATTACK)
        smax_actions[attack] = FIRST_ATTACK + n - 1 - (actions[attack] - FIRST_ATTACK)
        decoded = decode(jnp.asarray(smax_actions))
        _, expected, *_ = smax.step_env_no_decode(jax.random.key(9), reference, decoded)
        after = simulate(jax.random.key(9), state, jnp.asarray(actions, jnp.int32))[0]
        pos, health = after.pos, after.health
        np.testing.assert_allclose(pos, expected.unit_positions, atol=1e-5)
        np.testing.assert_allclose(health, expected.unit_health)
        fired += int((np.asarray(health) < np.asarray(state.health)).sum())
    assert fired > 0, "no attack resolved: the comparison would be vacuous"


def test_heuristic_target_choice_and_memory():
    own_pos = jnp.array([[10.0, 10.0]])
    foe_pos = jnp.array([[13.0, 10.0], [14.0, 10.0], [10.0, 30.0]])
    foe_health = jnp.array([45.0, 5.0, 45.0])
    args = (own_pos, jnp.array([0]), jnp.array([True]), foe_pos, foe_health, jnp.ones(3, bool))
    key = jax.random.key(0)
    memory = initial_memory(own_pos, 32.0)
    np.testing.assert_allclose(memory.waypoint, [[22.0, 22.0]])
    actions, mem = heuristic_actions(key, memory, *args, attack_mode="closest")
    assert int(actions[0]) == FIRST_ATTACK and int(mem.target[0]) == 0
    actions, _ = heuristic_actions(key, memory, *args, attack_mode="weakest")
    assert int(actions[0]) == FIRST_ATTACK + 1
    sticky = memory.replace(target=jnp.array([1]))
    actions, _ = heuristic_actions(key, sticky, *args, attack_mode="closest")
    assert int(actions[0]) == FIRST_ATTACK + 1, "keeps its last target while in range"
    picks = {
        int(heuristic_actions(jax.random.key(i), memory, *args, attack_mode="random")[0][0])
        for i in range(20)
    }
    assert picks == {FIRST_ATTACK, FIRST_ATTACK + 1}
    far = (
        own_pos,
        jnp.array([0]),
        jnp.array([True]),
        foe_pos + 20.0,
        foe_health,
        jnp.ones(3, bool),
    )
    actions, mem = heuristic_actions(key, memory, *far)
    assert int(actions[0]) == 0 and int(mem.target[0]) == -1, "no foe seen: to the waypoint"
    dead = (own_pos, jnp.array([0]), jnp.array([False]), *args[3:])
    assert int(heuristic_actions(key, memory, *dead)[0][0]) == STOP


# --- the SMACv2-style generator -----------------------------------------------------------
def test_reflect_and_surround_start_positions():
    keys = jax.random.split(jax.random.key(0), 64)
    n, m, size = 10, 11, 32.0
    reflect = np.asarray(jax.vmap(lambda k: start_positions(k, "reflect", n, m, size))(keys))
    assert (reflect[:, :n, 0] <= size / 2).all() and (reflect[:, n:, 0] >= size / 2).all()
    np.testing.assert_allclose(reflect[:, n : 2 * n, 0], size - reflect[:, :n, 0], atol=1e-5)
    np.testing.assert_allclose(reflect[:, n : 2 * n, 1], reflect[:, :n, 1])
    surround = np.asarray(jax.vmap(lambda k: start_positions(k, "surround", n, m, size))(keys))
    near_centre = np.abs(surround - size / 2).max(axis=-1) <= 2.0  # [K, U]
    allies_in = near_centre[:, :n].all(axis=1)
    enemies_in = near_centre[:, n:].all(axis=1)
    assert (allies_in | enemies_in).all() and 10 < allies_in.sum() < 54
    mixed = np.asarray(jax.vmap(lambda k: start_positions(k, "smacv2", n, m, size))(keys))
    is_reflect = np.isclose(mixed[:, n : 2 * n, 0], size - mixed[:, :n, 0], atol=1e-4).all(1)
    assert 10 < is_reflect.sum() < 54, "surround and reflect are drawn 50/50"
    assert (mixed >= 0).all() and (mixed <= size).all()


def test_smacv2_unit_types_mirror_and_extras_are_drawn():
    keys = jax.random.split(jax.random.key(0), 256)
    types = np.asarray(jax.vmap(lambda k: draw_unit_types(k, 10, 11, "any"))(keys))
    assert (types[:, 10:20] == types[:, :10]).all(), "enemies mirror the allies' types"
    assert len(np.unique(types[:, 20])) == 6, "the extra enemy's type is drawn (not discarded)"
    protoss = np.asarray(jax.vmap(lambda k: draw_unit_types(k, 5, 5, "protoss"))(keys))
    assert set(np.unique(protoss)) == {unit_type("stalker"), unit_type("zealot")}
    assert 0.4 < (protoss == unit_type("stalker")).mean() < 0.6

    env = marl.make("combat/smacv2_10_vs_11")
    states, _ = jax.jit(jax.vmap(env.reset))(keys[:8])
    assert len({np.asarray(t).tobytes() for t in states.unit_type}) == 8, "each reset differs"
    health = np.asarray(states.health)
    np.testing.assert_allclose(health, STATS.health[np.asarray(states.unit_type)])


# --- sanity statistics against the scripted enemy ----------------------------------------
def focus_fire_policy(state, ts, num_allies: int):
    """Each ally attacks the enemy with the least health among those in range, else moves
    toward the closest living enemy (to be moved to baselines/)."""
    n = num_allies
    in_range = ts.avail_actions[:, FIRST_ATTACK:]
    target = jnp.argmin(jnp.where(in_range, state.health[None, n:], jnp.inf), axis=1)
    distance = jnp.linalg.norm(state.pos[None, n:] - state.pos[:n, None], axis=-1)
    closest = jnp.argmin(jnp.where(state.alive[None, n:], distance, jnp.inf), axis=1)
    bearing = state.pos[n:][closest] - state.pos[:n]
    move = jnp.argmax(bearing @ jnp.asarray(MOVE_VECTORS[:STOP]).T, axis=1)
    actions = jnp.where(in_range.any(axis=1), FIRST_ATTACK + target, move)
    return jnp.where(ts.alive, actions, STOP).astype(jnp.int32)


def win_rate(env, policy, num_episodes: int = 200, seed: int = 0) -> float:
    """Fraction of `num_episodes` won by `policy(key, state, ts, memory) -> (actions, memory)`
    (memory: a HeuristicMemory of the allies), vmapped episodes in one jitted program."""
    n = env.num_allies

    def episode(key):
        k_reset, key = jax.random.split(key)
        state, ts = env.reset(k_reset)
        memory = initial_memory(state.pos[:n], env.map_size)

        def body(carry, k):
            state, ts, memory, done, won = carry
            k_act, k_step = jax.random.split(k)
            actions, memory = policy(k_act, state, ts, memory)
            state, ts = env.step(k_step, state, actions)
            won = jnp.where(done, won, ts.metrics["won"])
            return (state, ts, memory, done | ts.done, won), None

        carry = (state, ts, memory, jnp.zeros((), bool), jnp.zeros(()))
        keys = jax.random.split(key, env.spec.episode_limit)
        (_, _, _, done, won), _ = jax.lax.scan(body, carry, keys)
        return won, done

    keys = jax.random.split(jax.random.key(seed), num_episodes)
    won, done = jax.jit(jax.vmap(episode))(keys)
    assert np.asarray(done).all()
    return float(np.mean(won))


def test_random_policy_loses_to_the_heuristic():
    env = marl.make("combat/3m")

    def random_policy(key, state, ts, memory):
        return sample_actions(key, env.spec.action_space, ts.avail_actions), memory

    assert win_rate(env, random_policy) <= 0.02  # measured: 0.0


def test_focus_fire_beats_the_heuristic():
    env = marl.make("combat/3m")

    def focus_fire(key, state, ts, memory):
        return focus_fire_policy(state, ts, env.num_allies), memory

    assert win_rate(env, focus_fire) > 0.5  # measured: 0.625 on these 200 episodes


def test_mirrored_heuristic_wins_about_half():
    env = marl.make("combat/3m")
    n = env.num_allies

    def heuristic(key, state, ts, memory):
        alive = state.alive
        return heuristic_actions(
            key,
            memory,
            state.pos[:n],
            state.unit_type[:n],
            alive[:n],
            state.pos[n:],
            state.health[n:],
            alive[n:],
        )

    assert 0.3 <= win_rate(env, heuristic) <= 0.7  # measured: 0.505


# --- rewards, targets and the scripted enemy on more hand-built states --------------------
def _one_vs_two(enemy_health, pos=((10, 10), (13, 10), (12, 10))):
    """1m vs 2m (enemies never shoot): the ally at pos[0] with full health, enemy k at
    pos[k + 1] with enemy_health[k] (0: dead)."""
    env = marl.make("combat/custom", allies="1m", enemies="2m", enemy_shoots=False)
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    health = jnp.asarray([45.0, *enemy_health], jnp.float32)
    return env, state.replace(pos=jnp.asarray(pos, jnp.float32), health=health)


def test_reward_counts_overkill_once_dead_foes_never_and_scales_by_the_foes():
    """1m vs 2m, enemy 1 already dead, enemy 0 (health 5) shot for 9: damage 5 (not 9), one
    kill (not two), the win: raw 5 + 10 + 200 = 215 over the enemies' 2 * 45 + 2 * 10 + 200 =
    310, times 20 = 13.871."""
    env, state = _one_vs_two([5.0, 0.0])
    _, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.array([FIRST_ATTACK]))
    assert bool(ts.terminated) and float(ts.metrics["won"]) == 1.0
    np.testing.assert_allclose(np.asarray(ts.reward), [215 / 310 * REWARD_SCALE], rtol=1e-5)
    assert float(ts.metrics["damage_dealt"]) == pytest.approx(1.0)


def test_attacking_a_dead_unit_never_fires():
    """The ally attacks dead enemy 1 (2 away, in range): no shot, so its cooldown stays 0 and
    no health changes; the living enemy 0 (3 away) takes no damage either."""
    env, state = _one_vs_two([45.0, 0.0])
    after, ts = jax.jit(env.step)(jax.random.key(1), state, jnp.array([FIRST_ATTACK + 1]))
    np.testing.assert_array_equal(np.asarray(after.cooldown), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(after.health), [45.0, 45.0, 0.0])
    assert float(ts.reward[0]) == 0.0


def test_heuristic_ignores_dead_foes_and_drops_a_target_out_of_range():
    """A marine at (10, 10): a dead foe 1 away east is neither attacked nor chased, so it
    moves north toward the living foe 5 away (just outside its range 5). Remembering foe 0,
    which left its range, it takes foe 1, the one in range."""
    own = (jnp.array([[10.0, 10.0]]), jnp.array([0]), jnp.array([True]))
    foe_pos = jnp.array([[11.0, 10.0], [10.0, 15.0]])
    key, memory = jax.random.key(0), initial_memory(own[0], 32.0)
    foes = (foe_pos, jnp.array([0.0, 45.0]), jnp.array([False, True]))
    actions, mem = heuristic_actions(key, memory, *own, *foes)
    assert int(actions[0]) == 0 and int(mem.target[0]) == -1  # north, no target
    foes = (jnp.array([[16.0, 10.0], [12.0, 10.0]]), jnp.array([45.0, 45.0]), jnp.ones(2, bool))
    actions, mem = heuristic_actions(key, memory.replace(target=jnp.array([0])), *own, *foes)
    assert int(actions[0]) == FIRST_ATTACK + 1 and int(mem.target[0]) == 1


def test_cooldown_feature_is_a_fraction_capped_at_one():
    """A marine (cooldown 0.61) that fired late in a step with positive jitter holds up to
    0.61 + 2/16: its observed cooldown fraction is capped at 1 (0.7 -> 1, not 1.15); 0.305
    reads 0.5. The global state shows the same values."""
    env, state = _one_vs_two([45.0, 45.0])
    state = state.replace(cooldown=jnp.array([0.7, 0.305, 0.0]))
    ts = env.observe(state)
    assert float(ts.obs[0, 1]) == pytest.approx(1.0)
    np.testing.assert_allclose(np.asarray(ts.state)[[1, 11]], [1.0, 0.5], rtol=1e-6)
