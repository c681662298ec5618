"""Adapters from rollgate's canonical :class:`rollgate.rows.Row` to each trainer's own type, one module per trainer.

Importing this package imports no trainer: each module imports its trainer's package itself, so install only the
extra you use (``pip install 'rollgate[trl]'``, ``'rollgate[tinker]'``, ``'rollgate[verl]'``, ``'rollgate[miles]'``).

* :mod:`rollgate.adapters.trl_grpo` -- a ``rollout_func`` for TRL's ``GRPOTrainer``.
* :mod:`rollgate.adapters.tinker_datum` -- Tinker ``Datum`` objects (tokens shifted by one).
* :mod:`rollgate.adapters.verl_agent_loop` -- verl ``AgentLoopOutput`` objects and an ``AgentLoopBase`` subclass.
* :mod:`rollgate.adapters.miles_sample` -- miles ``Sample`` objects and a custom generate function.
"""
