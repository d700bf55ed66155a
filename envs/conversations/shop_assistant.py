"""shop-assistant-v0: find out what a customer wants by asking, search the catalogue, order the right item."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envs.conversations.interaction_env import InteractionEnv
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from turngym.chat.calls.formats import write_calls

if TYPE_CHECKING:
    from turngym.chat.calls.call import ToolCall

CATALOGUE = Path(__file__).parent / "data" / "shop_catalogue.json"

#: How each kind of preference is asked for, said and checked against a product.
SLOT_KINDS: dict[str, dict[str, Any]] = {
    "budget": {
        "keywords": ["budget", "price", "spend", "cost", "afford", "how much", "expensive", "cheap"],
        "reveal": "I can spend at most ${value}.",
        "ask": "What is your budget?",
        "check": "max",
        "field": "price",
    },
    "color": {
        "keywords": ["color", "colour"],
        "reveal": "I'd like it in {value}.",
        "ask": "Which colour would you like?",
        "check": "eq",
        "field": "color",
    },
    "brand": {
        "keywords": ["brand", "manufacturer", "company"],
        "reveal": "I prefer {value}.",
        "ask": "Do you have a preferred brand?",
        "check": "eq",
        "field": "brand",
    },
    "feature": {
        "keywords": ["feature", "must", "requirement", "special"],
        "reveal": "It must have this: {value}.",
        "ask": "Is there a feature it must have?",
        "check": "contains",
        "field": "features",
    },
}
DIFFICULTIES = {
    "easy": ["budget", "color"],
    "medium": ["budget", "color", "brand"],
    "hard": ["budget", "color", "brand", "feature"],
}


@cache
def _bundled_catalogue() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(CATALOGUE.read_text())["products"])


class ShopAssistantEnv(InteractionEnv):
    """A customer wants one product but says only the category; their budget, colour, brand (and a
    feature, on hard) must be asked for. The agent searches the bundled catalogue with tools and places
    the order, which ends the episode. Reward (from `interactions.ScriptedUser`): 0.2 × fraction of
    preferences found out + 0.8 × (1 if the order meets them all, else half the fraction met). Success
    means every preference is met; an order from another category than the one asked for meets none.
    `catalogue=` takes a JSON file of `{"products": [...]}` instead.
    """

    system_prompt = (
        "You are a shop assistant. Find out what the customer needs by asking questions, search the "
        "catalogue with your tools, and place an order for a product that meets all their wishes."
    )
    reset_options = {"difficulty": ("easy", "medium", "hard"), "goal": dict, "opening": str}

    def __init__(
        self,
        *,
        difficulty: str = "medium",
        catalogue: str | Path | None = None,
        max_results: int = 8,
        elicit_weight: float = 0.2,
        tools=None,
        render_mode: str | None = None,
    ):
        if difficulty not in DIFFICULTIES:
            raise ValueError(
                f"ShopAssistantEnv: unknown difficulty {difficulty!r}; choose from {sorted(DIFFICULTIES)}"
            )
        check_env_numbers(type(self).__name__, max_results=max_results, elicit_weight=elicit_weight)
        from interactions.scripted_user import ScriptedUser

        self.difficulty = difficulty
        self.catalogue = list(
            _bundled_catalogue() if catalogue is None else json.loads(Path(catalogue).read_text())["products"]
        )
        self._by_id = {p["id"].lower(): p for p in self.catalogue}
        self.max_results = max_results
        super().__init__(
            interaction=ScriptedUser(elicit_weight=elicit_weight), tools=tools, render_mode=render_mode
        )

    def own_tools(self):
        """search_products, get_product, place_order."""
        from envs.conversations.shop_tools import GetProduct, PlaceOrder, SearchProducts

        return [SearchProducts(), GetProduct(), PlaceOrder()]

    # ----- the catalogue -------------------------------------------------------------------------
    def search(
        self, category=None, max_price=None, color=None, brand=None, feature=None, in_stock_only=True
    ) -> list[dict]:
        """Products matching every given filter (text filters are case-blind), cheapest first."""

        def same(a: str | None, b: str) -> bool:
            return a is None or a.strip().lower() == b.lower()

        found = [
            p
            for p in self.catalogue
            if same(category, p["category"])
            and same(color, p["color"])
            and same(brand, p["brand"])
            and (max_price is None or p["price"] <= max_price)
            and (feature is None or any(feature.strip().lower() == f.lower() for f in p["features"]))
            and (not in_stock_only or p.get("stock", 0) > 0)
        ]
        return sorted(found, key=lambda p: (p["price"], p["id"]))

    def product(self, product_id: str) -> dict | None:
        """The product with this id (case-blind), or None."""
        return self._by_id.get(product_id.strip().lower())

    @staticmethod
    def summary(product: dict) -> dict:
        """What a search result shows of a product."""
        return {
            k: product[k] for k in ("id", "name", "brand", "color", "price", "rating", "features", "stock")
        }

    # ----- episodes ------------------------------------------------------------------------------
    def episode_info(self, options: dict[str, Any]) -> dict[str, Any]:
        """A customer whose hidden preferences are read off a random in-stock target product."""
        difficulty = options.pop("difficulty", self.difficulty)
        if difficulty not in DIFFICULTIES:
            raise ValueError(
                f"ShopAssistantEnv: unknown difficulty {difficulty!r}; choose from {sorted(DIFFICULTIES)}"
            )
        stocked = [p for p in self.catalogue if p.get("stock", 0) > 0]
        target = stocked[int(self.np_random.integers(len(stocked)))]
        goal: dict[str, dict[str, Any]] = {}
        for kind in DIFFICULTIES[difficulty]:
            if kind == "budget":
                value: Any = int(math.ceil(target["price"] / 50.0) * 50)
            elif kind == "feature":
                value = target["features"][int(self.np_random.integers(len(target["features"])))]
            else:
                value = target[kind]
            goal[kind] = {**SLOT_KINDS[kind], "value": value}
        self.category = target["category"]
        article = "an" if self.category[0] in "aeiou" else "a"
        opening = (
            f"Hi! I'm looking for {article} {self.category}."
            if not self.category.endswith("s")
            else f"Hi! I'm looking for {self.category}."
        )
        return {
            "difficulty": difficulty,
            "category": self.category,
            "goal": goal,
            "requirements": {"category": self.category},
            "opening": opening,
            **options,
        }

    def after_tool_call(self, call: ToolCall, result, turn_info: dict) -> StepResult | None:
        """A placed order ends the episode, graded by the interaction."""
        if call.name != "place_order" or not result.terminate:
            return None
        return self.end_episode({"item": self.product(result.answer or "")})

    def expert_action(self) -> str:
        """Ask about each preference, search with what was said, order the cheapest match."""
        question = self.interaction.expert_reply(self.transcript)
        if question:
            return question
        last = self.transcript[-1] if self.transcript else {}
        if last.get("role") == "tool" and last.get("name") == "search_products":
            try:
                results = json.loads(last["content"])
                return write_calls([("place_order", {"product_id": results[0]["id"]})], self.tool_call_format)
            except (ValueError, LookupError, TypeError):
                pass
        known = self.interaction.revealed_goal()
        filters: dict[str, Any] = {"category": self.category}
        for kind, field in (
            ("budget", "max_price"),
            ("color", "color"),
            ("brand", "brand"),
            ("feature", "feature"),
        ):
            if kind in known:
                filters[field] = known[kind]
        return write_calls([("search_products", filters)], self.tool_call_format)
