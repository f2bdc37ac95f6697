"""Speculative decoding in the continuous-batching simulator: the :class:`Speculative` spec.

``ContinuousBatcher(..., speculative=Speculative(draft="llama-3.1-8b", draft_tokens=4,
acceptance=0.8))`` makes every decode step a speculative one, each sequence gaining ``1 + L``
tokens (``L`` the leading accepted drafts, drawn before the kernel:
:func:`rooflinekit.workloads.speculative_gains`); the rules and the step's time are
:mod:`rooflinekit.batching._reference`'s ("Speculative decoding").

References
----------
.. [1] Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding",
       ICML 2023.
.. [2] Li et al., "EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty",
       ICML 2024 (a draft head of a fraction of a layer).
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from rooflinekit import catalog
from rooflinekit._validation import describe, real_number, whole_number
from rooflinekit.models import ModelShape
from rooflinekit.workloads import MAX_DRAFT_TOKENS, Beta, speculative_draws

__all__ = ["Speculative"]


@dataclasses.dataclass(frozen=True)
class Speculative:
    """Speculative decoding: a draft, the tokens it drafts per step, and their acceptance.

    Parameters
    ----------
    draft : ModelShape, str or float
        The draft model (a spec or a catalogue name, run on the target's GPUs with its ``tp``),
        or a draft head's share ``s`` of the target, in (0, 1] (an MTP or EAGLE head: a
        fraction ``f`` of a layer is ``s = f / n_layers``): its step costs ``s`` of the target's
        decode step, its prefill ``s`` of the target's, and it holds ``s`` of the target's
        layer weights and KV (:meth:`weight_bytes`, :meth:`kv_tokens`).
    draft_tokens : int
        Tokens drafted per step, k [tokens], in [1, 64] (vLLM's ``num_speculative_tokens``).
    acceptance : float or rooflinekit.workloads.Beta
        Probability α that the target accepts a drafted token, i.i.d. per position [1], in
        [0, 1]; a :class:`~rooflinekit.workloads.Beta` draws one α per request.
    seed : int
        Seed of the acceptance draws of :meth:`ContinuousBatcher.run` and
        :func:`~rooflinekit.batching.run_replicates` (row ``r`` draws from
        ``SeedSequence(seed, spawn_key=(r,))``), >= 0; :func:`~rooflinekit.batching.monte_carlo`
        draws them from each replicate's own seed instead.

    Raises
    ------
    ValueError
        A value out of its range; with a target model, a draft model with another vocabulary
        or more layers than it (checked by :class:`~rooflinekit.batching.ContinuousBatcher`,
        with :func:`rooflinekit.roofline.speculative_step_time`'s rule).
    TypeError
        A draft or acceptance of the wrong kind.

    See Also
    --------
    rooflinekit.roofline.speculative_step_time : the step's time, which the simulator's clock
        reproduces per step.
    rooflinekit.roofline.speculative_tokens_per_step : the mean gain.

    Notes
    -----
    A step of ``B`` decoding sequences lasts ``k`` draft steps of ``B`` sequences plus one
    verification of ``B(k + 1)`` positions (with the step's prefill slices), timed from the
    target's and the draft's :func:`rooflinekit.roofline.step_cost_coefficients`. The draft also
    prefills every prompt chunk (after the target), keeps its KV in the target's blocks
    (:meth:`kv_tokens`) and holds its weights beside the target's (off a budget the batcher
    derives, and off each replica's in :func:`rooflinekit.plan`; a given ``kv_budget_tokens`` is
    taken as it is). A draft head shares the target's embedding and LM head. At acceptance 0 the
    tick clock's run is the plain run, bit for bit, but the roofline's is slower (it still
    verifies ``k + 1`` positions after ``k`` draft steps); the exact reduction is ``k = 0``,
    which a batcher does not take (``speculative=None`` is plain decoding). In full:
    ``docs/techniques.md``, "Speculative decoding".

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, ICML 2023; Li et al., EAGLE, ICML 2024.
    """

    draft: object
    draft_tokens: int = 4
    acceptance: object = 0.8
    seed: int = 0

    def __post_init__(self):
        draft = self.draft
        if isinstance(draft, str):
            draft = catalog.model(draft)
            object.__setattr__(self, "draft", draft)
        if isinstance(draft, numbers.Real) and not isinstance(draft, bool):
            real_number("draft", draft, lo=0, hi=1, lo_open=True)
            object.__setattr__(self, "draft", float(draft))
        elif not isinstance(draft, ModelShape):
            raise TypeError(f"draft must be a ModelShape, a catalogue model name, or a share of "
                            f"the target's decode step in (0, 1]; got {describe(draft)}")
        k = whole_number("draft_tokens", self.draft_tokens, lo=1)
        if k > MAX_DRAFT_TOKENS:
            raise ValueError(f"draft_tokens must be in [1, {MAX_DRAFT_TOKENS}], got "
                             f"{self.draft_tokens!r}")
        object.__setattr__(self, "draft_tokens", k)
        if isinstance(self.acceptance, Beta):
            pass
        elif isinstance(self.acceptance, numbers.Real) and not isinstance(self.acceptance, bool):
            object.__setattr__(self, "acceptance",
                               real_number("acceptance", self.acceptance, lo=0, hi=1))
        else:
            raise TypeError(f"acceptance must be a number in [0, 1] or a "
                            f"rooflinekit.workloads.Beta, got {describe(self.acceptance)}")
        object.__setattr__(self, "seed", whole_number("seed", self.seed, lo=0))

    def row_seed(self, row: int) -> np.random.SeedSequence:
        """Seed of row ``row``'s acceptance draws: ``SeedSequence(seed, spawn_key=(row,))``."""
        return np.random.SeedSequence(self.seed, spawn_key=(int(row),))

    def kv_tokens(self, model: ModelShape, budget_tokens: int) -> int:
        """The token budget left to the sequences when the draft's KV cache shares the target's.

        Parameters
        ----------
        model : ModelShape
            The target model.
        budget_tokens : int
            The KV budget in the target's tokens [tokens], >= 0: its KV memory over
            ``model.kv_bytes_per_token``.

        Returns
        -------
        int
            Tokens of context each held by both the target and the draft [tokens]:
            ``floor(budget · kv_target / (kv_target + kv_draft))``, with ``kv_draft`` a draft
            head's share of the target's, ``s · kv_target``.

        See Also
        --------
        weight_bytes : the draft's weights, off the memory before the budget is counted.

        Notes
        -----
        A draft keeps its own KV of every token of each sequence in blocks of the target's table
        (``docs/techniques.md``), so a token of context costs both; paged, the budget's blocks
        are ``floor(tokens / block_size)``. Per-token sizes are
        :attr:`ModelShape.kv_bytes_per_token` (a sliding window counted at full size, as
        :func:`rooflinekit.memory.kv_budget_tokens` counts it).
        """
        budget = whole_number("budget_tokens", budget_tokens, lo=0)
        if not isinstance(model, ModelShape):
            raise TypeError(f"model must be a ModelShape, got {describe(model)}")
        target = float(model.kv_bytes_per_token)
        if isinstance(self.draft, ModelShape):
            both = target + float(self.draft.kv_bytes_per_token)
        else:                    # a head: its fraction of one layer's KV per token
            both = target + self.draft * target
        return int(budget * target // both)

    def weight_bytes(self, model: ModelShape | None) -> float:
        """Bytes of the draft's weights held beside the target's [bytes].

        Parameters
        ----------
        model : ModelShape or None
            The target model (a draft head's weights are a share of its layers'); ``None``
            where no target is known (a head then holds nothing counted).

        Returns
        -------
        float
            A draft model's :attr:`~rooflinekit.models.ModelShape.weight_bytes`; a draft
            head's ``s · (n_params − lm_head_params − input_embedding_params) ·
            bytes_per_param`` of the target: ``f`` of one layer's parameters
            (``s = f / n_layers``), sharing the target's embedding and LM head.

        See Also
        --------
        kv_tokens : the draft's KV, sharing the blocks the weights leave.

        References
        ----------
        .. [1] Li et al., "EAGLE: Speculative Sampling Requires Rethinking Feature
               Uncertainty", ICML 2024 (one decoder layer over the target's embedding and LM
               head).
        .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, §2.2 (MTP
               modules sharing the embedding and the output head).
        """
        if isinstance(self.draft, ModelShape):
            return float(self.draft.weight_bytes)
        if model is None:
            return 0.0
        if not isinstance(model, ModelShape):
            raise TypeError(f"model must be a ModelShape or None, got {describe(model)}")
        layers = model.n_params - model.lm_head_params - model.input_embedding_params
        return self.draft * float(layers) * float(model.bytes_per_param)

    @property
    def draft_share(self) -> float:
        """A draft head's cost as a share of the target's decode step; 0 for a draft model."""
        return self.draft if isinstance(self.draft, float) else 0.0

    def gains(self, output, seeds) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's gain table for 2-D ``(row, request)`` outputs, one seed per row.

        Returns ``(gain, offset)``: ``gain`` uint8 of shape ``(rows, max total output)``,
        ``offset`` int64 of ``output``'s shape: row ``r`` is
        :func:`rooflinekit.workloads.speculative_gains` of ``default_rng(seeds[r])``, made from
        its draws by the compiled ``_kernels.speculative_gain_table`` (the rest of a shorter
        row is 1, never read).
        """
        from rooflinekit.batching import _kernels  # numba: loaded with the simulator
        output, = _kernels.kernel_inputs(np.asarray(output))
        width = int(output.sum(axis=1).max()) if output.size else 0
        gain = np.ones((output.shape[0], width), np.uint8)
        offset = np.zeros(output.shape, np.int64)
        for r, seed in enumerate(seeds):
            draws, thresholds, offset[r] = speculative_draws(
                np.random.default_rng(seed), output[r], self.draft_tokens, self.acceptance)
            with _kernels.compile_notice(_kernels.speculative_gain_table):
                _kernels.speculative_gain_table(draws, thresholds, output[r], gain[r])
        return gain, offset
