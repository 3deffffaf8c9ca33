"""Internals of :mod:`relusym.zoo`: batched normal-form digests (``_digest``), the readers of zoo stores and
their chunk descriptions (``_sources``), and the job runner with its Parquet parts (``_run``)."""

__all__: list[str] = []
