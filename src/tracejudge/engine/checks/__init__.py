"""Rule evaluators, one module per layer; ``FACTORIES`` maps a check type to its builder."""

from __future__ import annotations

from tracejudge.engine.checks import baseline, budget, custom, outcome, policy, trajectory
from tracejudge.engine.checks.base import Check, Factory

FACTORIES: dict[str, Factory] = {
    "step_pattern": trajectory.build_step_pattern,
    "entity_binding": trajectory.build_entity_binding,
    "precedence": trajectory.build_precedence,
    "required_steps": trajectory.build_required,
    "forbidden_steps": trajectory.build_forbidden,
    "reference": trajectory.build_reference,
    "no_duplicate_side_effect": trajectory.build_no_dup,
    "no_loop": trajectory.build_no_loop,
    "recovery": trajectory.build_recovery,
    "tool_access": policy.build_tool_access,
    "approval": policy.build_approval,
    "max_calls": policy.build_max_calls,
    "forbidden_arguments": policy.build_forbidden_arguments,
    "sensitive_data": policy.build_sensitive_data,
    "identity_scope": policy.build_identity_scope,
    "claim_evidence": outcome.build_claim_evidence,
    "identifier_evidence": outcome.build_identifier_evidence,
    "state": outcome.build_state,
    "budget": budget.build_budget,
    "cel": custom.build_cel,
    "baseline": baseline.build_baseline,
}

__all__ = ["FACTORIES", "Check", "Factory"]
