"""Internals of :mod:`relusym.zoo`: batched normal-form digests (``_digest``), the readers of zoo stores and
their chunk descriptions (``_sources``), and the job runner with its parts (Arrow IPC files) (``_run``)."""

__all__: list[str] = []
