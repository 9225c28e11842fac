"""batched_affine never returns: each of its dozen tests loops until its time limit stops it.
(pairwise_sq_dists is not written: a dozen more tests that loop would show nothing more, and each
costs a busy second.)"""


def pairwise_sq_dists(a, b):
    raise NotImplementedError


def batched_affine(x, weight, bias):
    while True:
        pass
