"""The password hasher of dashboard users, shared by the login route and `users create`.

Argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane): argon2-cffi's default profile
takes 64 MiB per verification, which alone would take an API process past its 80 MB budget at
the first login. A hash keeps its parameters, so hashes made with others still verify.
"""
from __future__ import annotations

import argon2

PASSWORD_HASHER = argon2.PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
