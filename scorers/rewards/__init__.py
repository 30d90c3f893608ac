"""Rewards for training and serving: the in-process reward API (:func:`load`, tensors or PIL images, weighted sums,
gradients), :class:`RemoteReward` (the client of a ``ts2 serve`` service) and the Ray Serve service (:mod:`.serve`).

``from scorers.rewards import load`` is the public entry; the code lives in :mod:`scorers.rewards.api` and
:mod:`scorers.rewards.remote` (the client).
"""
from scorers.rewards.api import DIFFERENTIABLE, Reward, RewardOutput, check_normalize, load
from scorers.rewards.remote import RemoteReward

__all__ = ["DIFFERENTIABLE", "RemoteReward", "Reward", "RewardOutput", "check_normalize", "load"]
