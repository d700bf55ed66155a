"""Joining a Ray cluster that is already running (``ray start`` on every node) instead of starting one.

``trainer.run`` starts a private Ray instance unless it is given an address: ``RAY_ADDRESS`` (Ray's own
variable, also set by ``ray job submit``) or ``ray_kwargs.ray_init.address`` (passed to ``ray.init`` by
verl's ``run_ppo``). An address is checked before anything is written: an unreachable one, or a cluster
without ``trainer.nnodes`` nodes that can hold a node's share of the run, is one line. When joining,
the run gives up its own resource declarations (``ray_init.num_cpus`` and ``num_gpus``): the nodes
declared theirs in ``ray start``, and Ray refuses both when connecting.
"""

from __future__ import annotations

import os
import socket

from omegaconf import DictConfig, OmegaConf, open_dict

from trainer.checks.config_error import ConfigError

ADDRESS_KEY = "ray_kwargs.ray_init.address"
CONNECT_TIMEOUT_S = 5.0
# verl's resource pools ask this many CPUs next to each GPU (max_colocate_count, single_controller/ray/base.py).
VERL_CPUS_PER_BUNDLE = 3
RECIPE = "start it with `ray start --head` (docs/cluster.md)"


def given_address(cfg: DictConfig) -> str | None:
    """The cluster address as given (``ray_kwargs.ray_init.address``, else ``$RAY_ADDRESS``), stripped;
    None for none or ``local`` (the run starts its own Ray instance). ``auto`` is returned unresolved."""
    given = OmegaConf.select(cfg, ADDRESS_KEY, default=None) or os.environ.get("RAY_ADDRESS") or None
    if given is None or str(given).strip() in ("", "local"):
        return None
    return str(given).strip()


def cluster_address(cfg: DictConfig) -> str | None:
    """The address of the Ray cluster this run joins, or None when it starts its own Ray instance.

    ``auto`` means the cluster ``ray start`` last started on this machine (the address it records in
    Ray's temp dir). Ray's own ``auto`` would also join any Ray instance it finds running on the
    machine, someone else's private one included; turngym resolves it here so that cannot happen.

    Args:
        cfg: the training config; ``ray_kwargs.ray_init.address`` wins over ``$RAY_ADDRESS``.

    Returns:
        ``host:port`` (or a ``ray://`` address as given); None for none or ``local``. ConfigError when
        ``auto`` finds no cluster.
    """
    address = given_address(cfg)
    if address is None:
        return None
    if address == "auto":
        from ray._private.utils import get_ray_address_file, read_ray_address

        found = read_ray_address()
        if not found:
            raise ConfigError(
                f"{ADDRESS_KEY} / RAY_ADDRESS='auto': no cluster started with `ray start` on this machine "
                f"({get_ray_address_file(None)} is missing); give the head's HOST:PORT, or {RECIPE}"
            )
        address = found
    return address


def _host_port(address: str) -> tuple[str, int]:
    bare = address.removeprefix("ray://")
    host, sep, port = bare.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(
            f"{ADDRESS_KEY} / RAY_ADDRESS={address!r} is not host:port (e.g. 10.0.0.1:6379) or 'auto'"
        )
    return host.strip("[]"), int(port)


def check_cluster_reachable(cfg: DictConfig, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Raise ConfigError (one line) unless the cluster this run joins answers on its port.

    A TCP connection to the head's GCS port, before anything is written or Ray starts: ``ray.init``
    would otherwise retry for a minute and end in a long traceback.

    Args:
        cfg: the training config.
        timeout: seconds to wait for the head to accept the connection.

    Returns:
        The address joined (``auto`` resolved), or None when the run starts its own Ray instance.
    """
    address = cluster_address(cfg)
    if address is None:
        return None
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"cannot reach the Ray cluster at {host}:{port} ({ADDRESS_KEY} / RAY_ADDRESS): "
            f"{reason}; {RECIPE}, or fix the address"
        ) from None
    return address


def check_cluster_fits(cfg: DictConfig, address: str) -> None:
    """Raise ConfigError (one line) unless the cluster has ``trainer.nnodes`` nodes that can each host
    ``trainer.n_gpus_per_node`` workers.

    verl asks for one placement group per node, each packing ``n_gpus_per_node`` bundles of
    ``{CPU: 3, GPU: 1}`` onto one node (``single_controller/ray/base.py``); Ray waits for a group that no
    node can hold, so without this check such a run hangs before its first step. Counts the nodes'
    total resources (what other jobs hold is not known here); connects a short-lived driver.

    Args:
        cfg: the training config (``trainer.nnodes``, ``trainer.n_gpus_per_node``, ``trainer.device``).
        address: the cluster's address, as ``cluster_address`` returns it.
    """
    import logging

    import ray

    per_node = int(cfg.trainer.n_gpus_per_node)
    wanted = int(cfg.trainer.nnodes)
    device = "NPU" if str(cfg.trainer.device) == "npu" else "GPU"
    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
    finally:
        ray.shutdown()
    fit = [
        n
        for n in nodes
        if n["Resources"].get(device, 0) >= per_node
        and n["Resources"].get("CPU", 0) >= VERL_CPUS_PER_BUNDLE * per_node
    ]
    if len(fit) < wanted:
        raise ConfigError(
            f"the Ray cluster at {address} has {len(nodes)} node(s), {len(fit)} with {per_node} {device}(s) and "
            f"{VERL_CPUS_PER_BUNDLE * per_node} CPUs; trainer.nnodes={wanted} x trainer.n_gpus_per_node={per_node} "
            f"needs {wanted} such nodes: add nodes (ray start --address=... --num-gpus={per_node}) or lower "
            "trainer.nnodes"
        )


def join_existing_cluster(cfg: DictConfig) -> str | None:
    """Set up ``ray_kwargs.ray_init`` to join the cluster, if there is one to join; return its address.

    The nodes declared their CPUs and GPUs (logical ones on CPU) in ``ray start``; ``ray.init`` refuses
    ``num_cpus`` / ``num_gpus`` when it connects, so the platform's own declarations are dropped.
    """
    address = cluster_address(cfg)
    if address is None:
        return None
    with open_dict(cfg):
        ray_init = cfg.ray_kwargs.ray_init
        ray_init.address = address
        for key in ("num_cpus", "num_gpus"):
            if key in ray_init:
                ray_init[key] = None
    return address
