"""The password hasher of dashboard users, shared by the login route and `users create`.

Argon2id with the lightest of OWASP's equivalent profiles (7 MiB, 5 passes, 1 lane; the same
work as 19 MiB with 2 passes): a verification's memory is held by the API process for its
duration, and 19 MiB alone took a process past its 64 MB budget at the first login (docs/benchmarks.md
"Memory"). A hash keeps its parameters, so hashes made with older ones still verify (at their
own cost, until the password is set again).
"""
from __future__ import annotations

import argon2

PASSWORD_HASHER = argon2.PasswordHasher(time_cost=5, memory_cost=7 * 1024, parallelism=1)
