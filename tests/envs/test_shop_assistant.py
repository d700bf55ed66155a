"""shop-assistant-v0: elicit hidden preferences, search the bundled catalogue, order a matching product."""

import json

import pytest
from gymnasium.utils.env_checker import check_env

import envs


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def expert_episode(seed, difficulty="medium"):
    env = envs.make("shop-assistant-v0", difficulty=difficulty)
    messages, info = env.reset(seed=seed)
    steps, total = [messages], 0.0
    for _ in range(16):
        messages, reward, terminated, truncated, info = env.step(env.expert_action())
        steps.append(messages)
        total += reward
        if terminated or truncated:
            break
    return steps, total, info


def test_check_env():
    env = envs.make("shop-assistant-v0")
    check_env(env.unwrapped)
    check_env(env)
    names = [s["function"]["name"] for s in env.unwrapped.tool_schemas]
    assert names == ["search_products", "get_product", "place_order"]


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_elicits_everything_and_orders_a_match(difficulty):
    for seed in range(4):
        _, total, info = expert_episode(seed, difficulty)
        assert info["success"] and info["elicited"] == 1.0 and total == pytest.approx(1.0)


def test_same_seed_same_episode():
    assert expert_episode(11) == expert_episode(11)
    assert expert_episode(11)[0] != expert_episode(12)[0]


def test_ordering_without_asking_scores_less():
    env = envs.make("shop-assistant-v0", difficulty="hard")
    _, info = env.reset(seed=0)
    cheapest = min(
        (p for p in env.unwrapped.catalogue if p["category"] != info["category"] and p["stock"]),
        key=lambda p: p["price"],
    )
    _, reward, terminated, _, info = env.step(call("place_order", product_id=cheapest["id"]))
    assert terminated and info["success"] is False and info["elicited"] == 0.0 and reward < 0.5


def test_tool_errors_keep_the_episode():
    env = envs.make("shop-assistant-v0")
    env.reset(seed=0)
    out_of_stock = next(p["id"] for p in env.unwrapped.catalogue if p["stock"] == 0)
    for action in [
        call("place_order", product_id="NOPE-1"),
        call("place_order", product_id=out_of_stock),
        call("get_product", product_id="zzz"),
        call("search_products", max_price="cheap"),
        call("search_products", category="spaceships"),
    ]:
        messages, reward, terminated, truncated, _ = env.step(action)
        assert messages[0]["role"] == "tool" and not terminated and not truncated
    assert "No products match" in messages[0]["content"]
    found = json.loads(
        env.step(call("search_products", category="LAPTOP", in_stock_only=False))[0][0]["content"]
    )
    assert len(found) == 8 and [p["price"] for p in found] == sorted(p["price"] for p in found)


def test_hidden_goal_not_in_info():
    _, info = envs.make("shop-assistant-v0").reset(seed=0)
    assert "goal" not in info and info["category"]


def test_custom_catalogue(tmp_path):
    path = tmp_path / "cat.json"
    path.write_text(
        json.dumps(
            {
                "products": [
                    {
                        "id": "T-1",
                        "name": "Tee",
                        "category": "t-shirt",
                        "brand": "Acme",
                        "color": "red",
                        "price": 9.99,
                        "rating": 4.0,
                        "features": ["cotton"],
                        "stock": 2,
                    }
                ]
            }
        )
    )
    env = envs.make("shop-assistant-v0", catalogue=str(path), difficulty="easy")
    messages, _ = env.reset(seed=0)
    assert "t-shirt" in messages[-1]["content"]
