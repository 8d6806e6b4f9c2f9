"""Closed-form predictions, one module per idea; every public name is also ``pavlov.theory.<name>``.

This package never imports the code that measures (``conditioning``, ``attention``, ``stimuli``, ``stores``, ...):
a prediction computed by the code it checks proves nothing. Its modules import only each other, :mod:`pavlov._validate`
and :mod:`pavlov.stats`; the measuring modules sit above it.

Modules:

- :mod:`~pavlov.theory.overlaps`: moments of key overlaps (sphere, Gaussian), the Welch bound
- :mod:`~pavlov.theory.acquisition`: conditioning: acquisition and generalisation moments
- :mod:`~pavlov.theory.cost`: operation counts of the attention forms, norm rescaling, rounding
- :mod:`~pavlov.theory.interference`: the ISR registry, mean ISR and its variance, capacity, the worst case, recall accuracy
- :mod:`~pavlov.theory.mlp`: polynomial, ReLU and least-squares stores; the linear bound
- :mod:`~pavlov.theory.softmax`: the softmax store, its temperature, long-context scaling
- :mod:`~pavlov.theory.stacking`: error propagation through stacked heads and layers
- :mod:`~pavlov.theory.forgetting`: decay, drift, Oja's rule
- :mod:`~pavlov.theory.erasure`: erasing an association from a least-squares store
- :mod:`~pavlov.theory.phenomena`: conditioning phenomena's indices under Rescorla-Wagner and least squares
- :mod:`~pavlov.theory.cues`: noisy cues and basins of attraction
- :mod:`~pavlov.theory.hopfield`: the classical Hopfield network
- :mod:`~pavlov.theory.channel`: retrieval as a channel: bits per read and per stored number
- :mod:`~pavlov.theory.facts`: facts in a linear memory read by top-1: the n ln n ~ d^2 / 2 threshold
"""

# The registry is filled as its modules are imported: interference first, then mlp and softmax.
from .overlaps import (sphere_overlap_moments, welch_bound, sphere_overlap_moment, log_sphere_overlap_mgf,
                       key_overlap_moments, KEY_ENSEMBLES, GAUSSIAN_OVERLAP)
from .acquisition import acquisition_moments, normalised_strength, generalisation_moments
from .cost import attention_cost, norm_rescaling_change, rounding_scale, ATTENTION_FORMS, UNIT_ROUNDOFF
from .interference import (isr, isr_variance, capacity, isr_crossing, all_within_probability, worst_case_capacity,
                           hebbian_decoding_accuracy, recall_accuracy, hebbian_accuracy_capacity,
                           gaussian_overlap_isr, ISR_FORMULAS, ISR_VARIANCES, COUNT_LIMIT, WORST_CASE_METHODS)
from .mlp import linear_isr_bound, target_wins_probability
from .softmax import softmax_moment_limit, softmax_beta_for_isr, logn_scaled_beta, yarn_scaled_beta
from .stacking import stacked_error, stacked_error_bound, source_error_bound, bound_optimal_heads
from .forgetting import (decay_isr, decay_horizon, optimal_decay, hebbian_drift, oja_repeated_pair, stream_signal,
                         delta_isr, delta_horizon, oja_fixed_point)
from .erasure import (erasure_residual, erasure_damage, erasure_change, hebbian_erasure, downdate_gap, ERASURE_RULES,
                      HEBBIAN_ERASURE_RULES)
from .phenomena import rescorla_wagner_index, least_squares_index, gated_blocking_index, PHENOMENON_NAMES
from .cues import (noisy_cue_gain, noisy_cue_isr, nearest_key_accuracy, basin_radius, KERNEL_POWERS,
                   bayes_temperature, matched_ridge, linear_read_mse)
from .hopfield import (hopfield_retrieval_overlap, hopfield_bit_flip, hopfield_stable_fraction,
                       HOPFIELD_CRITICAL_LOAD, modern_critical_beta, modern_retrieval_weight)
from .channel import (retrieval_bits, stored_numbers, bits_per_number, optimal_load, hebbian_read_bits,
                      decay_retrieval_bits, binary_channel_bits, hebbian_bits_slope, quantisation_noise,
                      quantised_pair_bits, hopfield_one_step_bits, MATRIX_STORES, PAIR_STORES, HEBBIAN_BITS_LIMIT,
                      QUANTISER_RANGE)
from .facts import log_law_capacity, top1_threshold

__all__ = ["ATTENTION_FORMS", "COUNT_LIMIT", "ERASURE_RULES", "GAUSSIAN_OVERLAP", "HEBBIAN_BITS_LIMIT",
           "HEBBIAN_ERASURE_RULES", "HOPFIELD_CRITICAL_LOAD", "ISR_FORMULAS", "ISR_VARIANCES", "KERNEL_POWERS",
           "KEY_ENSEMBLES", "MATRIX_STORES", "PAIR_STORES", "PHENOMENON_NAMES", "QUANTISER_RANGE", "UNIT_ROUNDOFF",
           "WORST_CASE_METHODS", "acquisition_moments", "all_within_probability", "attention_cost", "basin_radius",
           "bayes_temperature", "binary_channel_bits", "bits_per_number", "bound_optimal_heads", "capacity",
           "decay_horizon", "decay_isr", "decay_retrieval_bits", "delta_horizon", "delta_isr", "downdate_gap",
           "erasure_change", "erasure_damage", "erasure_residual", "gated_blocking_index", "gaussian_overlap_isr",
           "generalisation_moments", "hebbian_accuracy_capacity", "hebbian_bits_slope", "hebbian_decoding_accuracy",
           "hebbian_drift", "hebbian_erasure", "hebbian_read_bits", "hopfield_bit_flip", "hopfield_one_step_bits",
           "hopfield_retrieval_overlap", "hopfield_stable_fraction", "isr", "isr_crossing", "isr_variance",
           "key_overlap_moments", "least_squares_index", "linear_isr_bound", "linear_read_mse", "log_law_capacity",
           "log_sphere_overlap_mgf", "logn_scaled_beta", "matched_ridge", "modern_critical_beta",
           "modern_retrieval_weight", "nearest_key_accuracy", "noisy_cue_gain", "noisy_cue_isr",
           "norm_rescaling_change", "normalised_strength", "oja_fixed_point", "oja_repeated_pair", "optimal_decay",
           "optimal_load", "quantisation_noise", "quantised_pair_bits", "recall_accuracy", "rescorla_wagner_index",
           "retrieval_bits", "rounding_scale", "softmax_beta_for_isr", "softmax_moment_limit", "source_error_bound",
           "sphere_overlap_moment", "sphere_overlap_moments", "stacked_error", "stacked_error_bound",
           "stored_numbers", "stream_signal", "target_wins_probability", "top1_threshold", "welch_bound",
           "worst_case_capacity", "yarn_scaled_beta"]
