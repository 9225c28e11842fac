"""Never returns."""


def pairwise_sq_dists(a, b):
    while True:
        pass


def batched_affine(x, weight, bias):
    while True:
        pass
