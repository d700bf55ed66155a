"""Did-you-mean for override keys: a misspelled key names the close valid keys of verl's and turngym's config.

Hydra's own message for an unknown key advises ``+key=value``, which adds the misspelled key next to
the real one and silently trains with the default. Here a key that is not in the composed config
is matched against every key that is, and ``+`` is only mentioned when nothing close exists.
"""

from __future__ import annotations

import difflib

from omegaconf import DictConfig

# Keys whose children the user invents (constructor kwargs, free-form dicts).
OPEN_KEY_PREFIXES = ("env.kwargs.",)
# A '+key' this close to a key that exists is a typo, not a deliberate new key.
PLUS_TYPO_CUTOFF = 0.9
FULL_KEY_CUTOFF = 0.9


def config_keys(cfg: DictConfig) -> set[str]:
    """Every dotted key of a config, nested dicts included (list items are not keys)."""
    keys: set[str] = set()

    def walk(prefix: str, node: DictConfig) -> None:
        for key in node:
            full = f"{prefix}.{key}" if prefix else str(key)
            keys.add(full)
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
                walk(full, child)

    walk("", cfg)
    return keys


def close_keys(key: str, keys: set[str], cutoff: float = 0.75) -> list[str]:
    """Up to three valid keys close to ``key``: same parent first, then anywhere in the config."""
    parent, _, leaf = key.rpartition(".")
    siblings = [k for k in keys if k.rpartition(".")[0] == parent]
    near = [
        f"{parent}.{m}" if parent else m
        for m in difflib.get_close_matches(leaf, [k.rpartition(".")[2] for k in siblings], n=3, cutoff=cutoff)
    ]
    # Whole dotted keys share long prefixes, which inflates their similarity: ask for more.
    for match in difflib.get_close_matches(key, sorted(keys), n=3, cutoff=max(cutoff, FULL_KEY_CUTOFF)):
        if match not in near and not key.startswith(match + "."):  # a parent is no suggestion
            near.append(match)
    # The same leaf under another parent (e.g. `actor.lr` for `actor.optim.lr`).
    if not near and leaf:
        near = sorted(k for k in keys if k.endswith("." + leaf))[:3]
    return near[:3]


def unknown_key_message(key: str, keys: set[str]) -> str:
    """One line for an override key the config does not have: did-you-mean, or how to add a new key."""
    near = close_keys(key, keys)
    if near:
        return f"unknown key {key!r}; did you mean {' or '.join(near)}?"
    parent = key.rpartition(".")[0]
    where = f" under {parent!r}" if parent and parent in keys else ""
    return (
        f"unknown key {key!r}: neither verl's nor turngym's config has it{where}; "
        f"a key verl reads but does not declare is added with +{key}=VALUE"
    )


def check_override_keys(
    overrides: list[str], keys: set[str], groups: tuple[str, ...], plus_only: bool = False
) -> str | None:
    """The message for the first override whose key is unknown or a '+' typo of a known key, else None.

    ``plus_only``: Hydra accepted the overrides, so only '+' keys can be silent typos (keys such as
    list items, which ``keys`` does not hold, are then not second-guessed).
    """
    for override in overrides:
        raw_key = override.partition("=")[0]
        key = raw_key.lstrip("+~")
        if key in groups or key.startswith(OPEN_KEY_PREFIXES) or raw_key.startswith("~"):
            continue
        if plus_only and not raw_key.startswith("+"):
            continue
        if raw_key.startswith("+"):
            if key in keys:
                continue
            typo = close_keys(key, keys, cutoff=PLUS_TYPO_CUTOFF)
            if typo:
                return (
                    f"{raw_key!r} would add a new key beside {' or '.join(typo)}, which the trainer would "
                    f"ignore; did you mean {typo[0]}?"
                )
            continue
        if key not in keys:
            return unknown_key_message(key, keys)
    return None
