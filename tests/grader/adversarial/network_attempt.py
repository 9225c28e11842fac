"""Tries to reach a server on the grading machine's loopback (the test writes its port below)."""
import socket

try:
    _port = 9  # PORT: the test writes its server's port here
    with socket.create_connection(("127.0.0.1", _port), timeout=2) as conn:
        conn.sendall(b"exfiltrated")
except OSError:
    pass


def pairwise_sq_dists(a, b):
    raise NotImplementedError


def batched_affine(x, weight, bias):
    raise NotImplementedError
