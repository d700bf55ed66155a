"""The shop assistant's tools: search the catalogue, look up a product, place the order."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tools import Tool, ToolResult


class _ShopTool(Tool):
    """A tool that acts on the shop env running the episode, through `in_shop`."""

    async def run(self, args: BaseModel, context: dict | None) -> Any:
        """Refuse outside the shop; otherwise `in_shop` with the episode's env."""
        env = (context or {}).get("env")
        if env is None:
            return ToolResult.error("Error: this tool only works inside the shop.")
        return self.in_shop(args, env)

    def in_shop(self, args: BaseModel, env: Any) -> Any:
        """Do the work against `env`."""
        raise NotImplementedError(f"{type(self).__name__}.in_shop is not implemented")


class SearchProducts(_ShopTool):
    """Filter the catalogue of the env running the episode."""

    name = "search_products"
    description = "Search the shop's catalogue. Every filter is optional; results are sorted by price."

    class Args(BaseModel):
        category: str | None = Field(None, description="Product category, e.g. 'laptop' or 'headphones'.")
        max_price: float | None = Field(None, description="Highest price in dollars.")
        color: str | None = Field(None, description="Colour, e.g. 'black'.")
        brand: str | None = Field(None, description="Brand name.")
        feature: str | None = Field(None, description="A feature the product must have, e.g. 'waterproof'.")
        in_stock_only: bool = Field(True, description="Leave out products that are out of stock.")

    def in_shop(self, args: BaseModel, env: Any) -> Any:
        found = env.search(**args.model_dump())
        if not found:
            return "No products match these filters."
        return [env.summary(p) for p in found[: env.max_results]]


class GetProduct(_ShopTool):
    """Full details of one product."""

    name = "get_product"
    description = "Get all details of one product by its id."

    class Args(BaseModel):
        product_id: str = Field(description="The product id, e.g. 'L-101'.")

    def in_shop(self, args: BaseModel, env: Any) -> Any:
        product = env.product(args.product_id)
        if product is None:
            return ToolResult.error(f"Error: no product with id {args.product_id!r}.")
        return product


class PlaceOrder(_ShopTool):
    """Order a product for the customer: this ends the conversation."""

    name = "place_order"
    description = "Order one product for the customer. This ends the conversation, so ask first."

    class Args(BaseModel):
        product_id: str = Field(description="The id of the product to order.")

    def in_shop(self, args: BaseModel, env: Any) -> Any:
        product = env.product(args.product_id)
        if product is None:
            return ToolResult.error(f"Error: no product with id {args.product_id!r}; nothing was ordered.")
        if product.get("stock", 0) <= 0:
            return ToolResult.error(f"Error: {args.product_id} is out of stock; nothing was ordered.")
        return ToolResult(
            f"Order placed: {product['name']} ({product['id']}) for ${product['price']:.2f}.",
            terminate=True,
            answer=product["id"],
        )
