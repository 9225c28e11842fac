"""batched_affine never returns: each of its tests loops until its time limit stops it.
(pairwise_sq_dists is not written: its fourteen tests looping as well would show nothing more,
and each would cost a busy second.)"""


def pairwise_sq_dists(a, b):
    raise NotImplementedError


def batched_affine(x, weight, bias):
    while True:
        pass
