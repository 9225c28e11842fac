"""Loops inside one C call, where no Python signal handler (so no in-process alarm) ever runs."""
import itertools


def pairwise_sq_dists(a, b):
    return sum(itertools.count())


def batched_affine(x, weight, bias):
    return sum(itertools.count())
