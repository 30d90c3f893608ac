"""Rewards for training and serving: the in-process reward API (:func:`load`, tensors or PIL images, weighted sums,
gradients), :class:`RemoteReward` (the client of a ``ts2 serve`` service) and the Ray Serve service (:mod:`.serve`).

``from scorers.rewards import load`` is the public entry; the code lives in :mod:`scorers.rewards.api`.
"""
from scorers.rewards.api import DIFFERENTIABLE, RemoteReward, Reward, RewardOutput, check_normalize, load

__all__ = ["DIFFERENTIABLE", "RemoteReward", "Reward", "RewardOutput", "check_normalize", "load"]
